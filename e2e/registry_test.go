package e2e

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/krm-catalog/krm-catalog/apiclient"
	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/server"
	"github.com/krm-catalog/krm-catalog/store"
	"github.com/krm-catalog/krm-catalog/store/storetest"
	"github.com/krm-catalog/krm-catalog/web"
)

// startRegistryService runs a replica that pushes catalogs to an in-process registry (with the
// referrers API) on 127.0.0.1 and reports signatures from it.
func startRegistryService(t *testing.T) (*service, string, *oci.Client) {
	t.Helper()
	return startRegistryServiceWith(t, nil)
}

// startRegistryServiceWith is startRegistryService whose replica verifies keyless signatures with
// keyless.
func startRegistryServiceWith(t *testing.T, keyless *identity.Verifier) (*service, string, *oci.Client) {
	t.Helper()
	reg := httptest.NewServer(registry.New(registry.WithReferrersSupport(true)))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	client := oci.NewClient(oci.Options{})
	st, err := store.Open(context.Background(), storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	sigs := server.NewSignatures(client, st, keyless, nil)
	site, err := web.New(web.Config{Store: st, Signatures: sigs})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: st, Validator: v, Registry: prometheus.NewRegistry(), OCI: client, OCIPrefix: host + "/krm",
		Signatures: sigs, Keyless: keyless, Mount: site.Mount})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &service{url: hs.URL, store: st}, host, client
}

func TestPublishPushesToTheRegistryAndReportsSignatures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, host, client := startRegistryService(t)
	tok := token(t, s, "example.com")
	v1 := catalogtest.Catalog(catalogtest.Options{Name: "signed", Functions: 2})

	r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/signed/versions/1.0.0", tok, v1)
	if r.status != http.StatusCreated {
		t.Fatalf("publish: %d %s", r.status, r.body)
	}
	cv := r.json(t)["catalog"].(map[string]any)
	ref, _ := cv["ociReference"].(string)
	digest, _ := cv["ociDigest"].(string)
	if ref != host+"/krm/catalogs/signed:1.0.0" || !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("pushed to %q as %q", ref, digest)
	}
	// what the registry holds is the catalog, byte for byte
	_, data, err := client.Read(ctx, ref, 1<<20)
	if err != nil || string(data) != string(v1) {
		t.Fatalf("the registry's copy differs: %v", err)
	}

	signature := func() string {
		t.Helper()
		versions := do(t, http.MethodGet, s.url+"/api/v1/catalogs/signed/versions", "", nil).json(t)["versions"].([]any)
		sig, _ := versions[0].(map[string]any)["signature"].(string)
		return sig
	}
	if got := signature(); got != "unsigned" {
		t.Errorf("before signing: %q, want unsigned", got)
	}

	// signed with a key nobody registered: "signed"
	password := []byte("pw")
	otherPriv, _, err := sign.GenerateKeyPair(password)
	if err != nil {
		t.Fatal(err)
	}
	other, err := sign.LoadPrivateKey(otherPriv, password)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Sign(ctx, ref, other, oci.SignOptions{}); err != nil {
		t.Fatal(err)
	}
	priv, pub, err := sign.GenerateKeyPair(password)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := sign.LoadPrivateKey(priv, password)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Sign(ctx, ref, signer, oci.SignOptions{}); err != nil {
		t.Fatal(err)
	}
	// the recorded "unsigned" stands until the check ages, or the publisher's keys change
	if got := signature(); got != "unsigned" {
		t.Errorf("a recorded check was not reused: %q", got)
	}

	// registering a key: only the publisher's own token may, with proof, and it makes the status verified
	other2 := token(t, s, "intruder.example")
	intruder, err := apiclient.New(s.url, other2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := intruder.AddKey(ctx, "example.com", signer); !isStatus(err, http.StatusForbidden) {
		t.Errorf("another publisher registered a key: %v", err)
	}
	if r := do(t, http.MethodPut, s.url+"/api/v1/publishers/example.com/keys", tok, pub); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "bare public key") {
		t.Errorf("a bare public key: %d %s", r.status, r.body)
	}
	owner, err := apiclient.New(s.url, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, created, err := owner.AddKey(ctx, "example.com", signer)
	if err != nil || !created {
		t.Fatalf("register key: %v (created %v)", err, created)
	}
	if got := signature(); got != "verified" {
		t.Errorf("signed by the registered key: %q, want verified", got)
	}
	if r := do(t, http.MethodDelete, s.url+"/api/v1/publishers/example.com/keys/"+key.Fingerprint, tok, nil); r.status != http.StatusNoContent {
		t.Fatalf("delete key: %d", r.status)
	}
	// removing the key re-evaluates what it verified, and keeps it in the history
	if keys, err := owner.ListKeys(ctx, "example.com"); err != nil || len(keys.Keys) != 0 || len(keys.Removed) != 1 || keys.Removed[0].Fingerprint != key.Fingerprint {
		t.Errorf("keys after removal: %+v %v", keys, err)
	}
	if got := signature(); got != "signed" {
		t.Errorf("signatures but no registered key: %q, want signed", got)
	}
}

func TestPublishFailsWhenThePushFails(t *testing.T) {
	t.Parallel()
	s, _, _ := startRegistryService(t)
	// a registry that answers 500 to everything
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	t.Cleanup(broken.Close)
	v, _ := catalog.NewValidator()
	srv, err := server.New(server.Config{Store: s.store, Validator: v, Registry: prometheus.NewRegistry(),
		OCI: oci.NewClient(oci.Options{}), OCIPrefix: strings.TrimPrefix(broken.URL, "http://") + "/krm"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	tok := token(t, s, "example.com")
	r := do(t, http.MethodPut, hs.URL+"/api/v1/catalogs/broken/versions/1.0.0", tok, catalogtest.Catalog(catalogtest.Options{Name: "broken", Functions: 1}))
	if r.status != http.StatusBadGateway || !strings.Contains(string(r.body), "nothing was published") {
		t.Errorf("publish with a broken registry: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodGet, hs.URL+"/api/v1/catalogs/broken", "", nil); r.status != http.StatusNotFound {
		t.Errorf("the failed publish stored the catalog: %d", r.status)
	}
}

func TestFunctionVersionsReportTheirImagesSignatures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, host, client := startRegistryService(t)
	tok := token(t, s, "example.com")
	// an artifact stands in for the function's image: signatures attach to any manifest
	pushed, err := client.Push(ctx, host+"/functions/set-thing:v1", oci.PushOptions{Kind: oci.KindStarlark, Files: []oci.File{{Title: "main.star", Data: []byte("def main(): pass\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	image := host + "/functions/set-thing@" + string(pushed.Descriptor.Digest)
	doc := `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata: {name: images}
spec:
  krmFunctions:
    - group: fn.example.com
      names: {kind: SetThing}
      description: Sets a thing.
      publisher: example.com
      versions:
        - name: v1
          runtime:
            container: {image: "` + image + `"}
`
	if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/images/versions/1.0.0", tok, []byte(doc)); r.status != http.StatusCreated {
		t.Fatalf("publish: %d %s", r.status, r.body)
	}
	status := func() string {
		entries := do(t, http.MethodGet, s.url+"/api/v1/functions/fn.example.com/SetThing", "", nil).json(t)["entries"].([]any)
		sig, _ := entries[0].(map[string]any)["signature"].(string)
		return sig
	}
	if got := status(); got != "unsigned" {
		t.Errorf("before signing: %q", got)
	}
	priv, _, err := sign.GenerateKeyPair(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := sign.LoadPrivateKey(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	// signed the way cosign v3 signs: a sigstore bundle stored as a referrer
	if _, err := client.Sign(ctx, image, signer, oci.SignOptions{Format: oci.FormatBundle}); err != nil {
		t.Fatal(err)
	}
	owner, err := apiclient.New(s.url, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := owner.AddKey(ctx, "example.com", signer); err != nil {
		t.Fatalf("register key: %v", err)
	}
	if got := status(); got != "verified" {
		t.Errorf("signed by the registered key: %q, want verified", got)
	}
	res := do(t, http.MethodGet, s.url+"/api/v1/resolve?apiVersion=fn.example.com/v1&kind=SetThing", "", nil).json(t)
	if sig := res["function"].(map[string]any)["signature"]; sig != "verified" {
		t.Errorf("resolve reports %v", sig)
	}
}

// isStatus reports whether err is an API error with the given HTTP status.
func isStatus(err error, status int) bool {
	var apiErr *apiclient.Error
	return errors.As(err, &apiErr) && apiErr.Status == status
}

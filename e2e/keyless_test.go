package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"

	"github.com/krm-catalog/krm-catalog/apiclient"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/identity/identitytest"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

const (
	ghIssuer  = "https://token.actions.githubusercontent.com"
	releaseWF = "https://github.com/example/fns/.github/workflows/release.yml@refs/tags/v1.0.0"
)

// A publisher with a registered identity sees its catalog verified after a keyless signature: the
// service (its store on PostgreSQL, an in-process registry) trusts a virtual Sigstore, the catalog
// is signed keylessly as cosign v3 signs (a bundle referrer holding cosign's signature statement),
// and the identity is registered over the API with a challenge signed keylessly.
func TestKeylessIdentityVerifiesCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vs := identitytest.New(t)
	s, _, _ := startRegistryServiceWith(t, vs.Verifier(t))
	tok := token(t, s, "example.com")

	publish := func(name string) (ref string, d digest.Digest) {
		t.Helper()
		r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/"+name+"/versions/1.0.0", tok, catalogtest.Catalog(catalogtest.Options{Name: name, Functions: 1}))
		if r.status != http.StatusCreated {
			t.Fatalf("publish %s: %d %s", name, r.status, r.body)
		}
		cv := r.json(t)["catalog"].(map[string]any)
		return cv["ociReference"].(string), digest.Digest(cv["ociDigest"].(string))
	}
	signKeyless := func(ref string, d digest.Digest, subject string) {
		t.Helper()
		st := identitytest.Statement(t, d.Encoded(), sign.CosignSignPredicateType, map[string]any{})
		identitytest.AttachBundle(t, ref, vs.SignStatement(t, subject, ghIssuer, st), sign.CosignSignPredicateType)
	}
	versionOf := func(name string) map[string]any {
		t.Helper()
		return do(t, http.MethodGet, s.url+"/api/v1/catalogs/"+name+"/versions", "", nil).json(t)["versions"].([]any)[0].(map[string]any)
	}

	ref, d := publish("ours")
	signKeyless(ref, d, releaseWF)
	otherRef, otherD := publish("theirs")
	signKeyless(otherRef, otherD, "https://github.com/mallory/fns/.github/workflows/release.yml@refs/tags/v1.0.0")
	if got := versionOf("ours")["signature"]; got != "signed" {
		t.Errorf("signed keylessly, no identity registered: %v, want signed", got)
	}

	owner, err := apiclient.New(s.url, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	pattern := identity.Pattern{Issuer: ghIssuer, Subject: "https://github.com/example/fns/.github/workflows/release.yml@refs/tags/*"}
	signAs := func(subject string) func(context.Context, []byte) ([]byte, error) {
		return func(_ context.Context, payload []byte) ([]byte, error) {
			return vs.SignBlob(t, subject, ghIssuer, payload), nil
		}
	}
	// proof by another workflow is refused, naming it
	_, _, err = owner.AddIdentity(ctx, "example.com", pattern, signAs("https://github.com/example/fns/.github/workflows/ci.yml@refs/heads/main"))
	if !isStatus(err, http.StatusForbidden) || !strings.Contains(err.Error(), "ci.yml") {
		t.Errorf("an identity proven by another workflow: %v, want 403 naming ci.yml", err)
	}
	id, created, err := owner.AddIdentity(ctx, "example.com", pattern, signAs(releaseWF))
	if err != nil || !created || id.Pattern != pattern {
		t.Fatalf("add identity: %+v created %v: %v", id, created, err)
	}

	got := versionOf("ours")
	if got["signature"] != "verified" {
		t.Errorf("signed keylessly by the registered identity: %v, want verified", got["signature"])
	}
	if diff := cmp.Diff(map[string]any{"issuer": ghIssuer, "subject": releaseWF}, got["signedBy"]); diff != "" {
		t.Errorf("signedBy (-want +got):\n%s", diff)
	}
	if got := versionOf("theirs"); got["signature"] != "signed" || got["signedBy"] != nil {
		t.Errorf("signed by an unregistered workflow: %v by %v, want signed by nobody named", got["signature"], got["signedBy"])
	}

	// removing the identity takes "verified" back
	if err := owner.DeleteIdentity(ctx, "example.com", pattern); err != nil {
		t.Fatal(err)
	}
	if got := versionOf("ours")["signature"]; got != "signed" {
		t.Errorf("after removing the identity: %v, want signed", got)
	}
	ids, err := owner.ListIdentities(ctx, "example.com")
	if err != nil || len(ids.Identities) != 0 || len(ids.Removed) != 1 {
		t.Errorf("ListIdentities = %+v, %v; want one removed", ids, err)
	}
}

// TestAddIdentityCommand registers an identity as a CI job would: identity-challenge writes the
// payload and prints the nonce, the payload is signed keylessly (here by the virtual Sigstore, in
// CI by cosign sign-blob --bundle), and add-identity posts the bundle.
func TestAddIdentityCommand(t *testing.T) {
	t.Parallel()
	vs := identitytest.New(t)
	s, _, _ := startRegistryServiceWith(t, vs.Verifier(t))
	tok := token(t, s, "example.com")
	dir := t.TempDir()
	payload, proof := filepath.Join(dir, "challenge.txt"), filepath.Join(dir, "proof.json")
	api := []string{"--server", s.url, "--token", tok, "--publisher", "example.com"}
	subject := "https://github.com/example/fns/.github/workflows/release.yml@refs/tags/*"

	challenge := func() string {
		t.Helper()
		code, stdout, stderr := runCLI(t, append([]string{"publisher", "identity-challenge", "--payload", payload}, api...)...)
		if code != 0 {
			t.Fatalf("identity-challenge: exit %d, %s", code, stderr)
		}
		data, err := os.ReadFile(payload)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(proof, vs.SignBlob(t, releaseWF, ghIssuer, data), 0o644); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(stdout)
	}
	for _, tc := range []struct {
		name    string
		subject string
		code    int
		says    string
	}{
		{"a pattern for every org", "https://github.com/*", 2, "first path segment"},
		{"a pattern the certificate does not match", "https://github.com/example/fns/.github/workflows/ci.yml@*", 1, "ci.yml"},
		{"the release workflow", subject, 0, "identity " + subject + " (issuer " + ghIssuer + ") registered for publisher example.com\n"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"publisher", "add-identity", "--issuer", ghIssuer, "--subject", tc.subject,
			"--nonce", challenge(), "--bundle", proof}, api...)...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.says) {
			t.Errorf("%s: exit %d, %s%s; want exit %d saying %q", tc.name, code, stdout, stderr, tc.code, tc.says)
		}
	}
}

// slsaProvenance is an SLSA v1 predicate as GitHub's attest-build-provenance writes it.
var slsaProvenance = map[string]any{
	"buildDefinition": map[string]any{
		"buildType":          "https://actions.github.io/buildtypes/workflow/v1",
		"externalParameters": map[string]any{"workflow": map[string]any{"ref": "refs/tags/v1.0.0", "repository": "https://github.com/example/fns", "path": ".github/workflows/release.yml"}},
		"resolvedDependencies": []any{map[string]any{"uri": "git+https://github.com/example/fns@refs/tags/v1.0.0",
			"digest": map[string]any{"gitCommit": "0123456789abcdef0123456789abcdef01234567"}}},
	},
	"runDetails": map[string]any{"builder": map[string]any{"id": "https://github.com/actions/runner/github-hosted"}},
}

// The website's function page shows signer, provenance and SBOM for a signed, attested version:
// its image, in a registry, signed keylessly by the publisher's registered release workflow, with
// an SLSA provenance attestation by the same workflow and an SPDX SBOM as referrers.
func TestFunctionPageShowsSignerProvenanceAndSBOM(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vs := identitytest.New(t)
	s, host, client := startRegistryServiceWith(t, vs.Verifier(t))
	tok := token(t, s, "example.com")

	image := host + "/fns/set-labels"
	d := registrytest.PushImage(t, image+":v1.0.0", "")
	pinned := image + "@" + d.String()
	sign1 := identitytest.Statement(t, d.Encoded(), sign.CosignSignPredicateType, map[string]any{})
	identitytest.AttachBundle(t, pinned, vs.SignStatement(t, releaseWF, ghIssuer, sign1), sign.CosignSignPredicateType)
	prov := identitytest.Statement(t, d.Encoded(), identity.SLSAProvenanceV1, slsaProvenance)
	identitytest.AttachBundle(t, pinned, vs.SignStatement(t, releaseWF, ghIssuer, prov), identity.SLSAProvenanceV1)
	// provenance for the same image by someone else is not shown
	forged := map[string]any{"runDetails": map[string]any{"builder": map[string]any{"id": "https://evil.example/builder"}}}
	identitytest.AttachBundle(t, pinned, vs.SignStatement(t, "https://github.com/mallory/x/.github/workflows/r.yml@refs/heads/main", ghIssuer,
		identitytest.Statement(t, d.Encoded(), identity.SLSAProvenanceV1, forged)), identity.SLSAProvenanceV1)
	spdx, err := os.ReadFile("../cmd/krm-catalog/cmd/testdata/sbom/set-labels.spdx.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.AttachSBOM(ctx, pinned, spdx, oci.AttachOptions{}); err != nil {
		t.Fatal(err)
	}

	cat := fmt.Sprintf(`apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: trusted
spec:
  krmFunctions:
  - group: fn.example.com
    names:
      kind: SetLabels
    description: Sets labels.
    publisher: example.com
    versions:
    - name: v1
      runtime:
        container:
          image: %s:v1.0.0
          sha256: %s
`, image, d.Encoded())
	if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/trusted/versions/1.0.0", tok, []byte(cat)); r.status != http.StatusCreated {
		t.Fatalf("publish: %d %s", r.status, r.body)
	}
	owner, err := apiclient.New(s.url, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	pattern := identity.Pattern{Issuer: ghIssuer, Subject: "https://github.com/example/fns/.github/workflows/release.yml@refs/tags/*"}
	if _, _, err := owner.AddIdentity(ctx, "example.com", pattern, func(_ context.Context, payload []byte) ([]byte, error) {
		return vs.SignBlob(t, releaseWF, ghIssuer, payload), nil
	}); err != nil {
		t.Fatal(err)
	}

	r := do(t, http.MethodGet, s.url+"/functions/fn.example.com/SetLabels", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("function page: %d", r.status)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	text := func(sel string) string { return strings.Join(strings.Fields(doc.Find(sel).Text()), " ") }
	got := map[string]string{
		"badge":    doc.Find(".fn-badges [data-signature]").AttrOr("data-signature", ""),
		"signer":   text(`#trust-title ~ dl [data-signed-by="identity"]`),
		"source":   text("[data-provenance-source]"),
		"commit":   doc.Find("[data-provenance-source] a:has([data-commit])").AttrOr("href", ""),
		"builder":  text("[data-provenance-builder]"),
		"sbomText": text(`a[data-sbom="SPDX"]`),
	}
	want := map[string]string{
		"badge":    "verified",
		"signer":   releaseWF + " (issuer token.actions.githubusercontent.com)",
		"source":   "github.com/example/fns refs/tags/v1.0.0 at commit 0123456789abcdef0123456789abcdef01234567",
		"commit":   "https://github.com/example/fns/commit/0123456789abcdef0123456789abcdef01234567",
		"builder":  "https://github.com/actions/runner/github-hosted",
		"sbomText": "SPDX SBOM",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the function page (-want +got):\n%s", diff)
	}
	if strings.Contains(string(r.body), "evil.example") {
		t.Errorf("the page shows provenance signed by an unregistered identity")
	}

	// the SBOM link downloads the document, as attached
	href := doc.Find(`a[data-sbom="SPDX"]`).AttrOr("href", "")
	sb := do(t, http.MethodGet, s.url+href, "", nil)
	if sb.status != http.StatusOK || sb.header.Get("Content-Type") != oci.MediaTypeSPDX || !bytes.Equal(sb.body, spdx) {
		t.Errorf("GET %s: %d %s, %d bytes; want the SPDX document", href, sb.status, sb.header.Get("Content-Type"), len(sb.body))
	}
	// an SBOM the version does not list is not read from the registry
	if r := do(t, http.MethodGet, s.url+"/api/v1/functions/fn.example.com/SetLabels/versions/v1/sboms/sha256:"+strings.Repeat("0", 64), "", nil); r.status != http.StatusNotFound {
		t.Errorf("an unlisted SBOM: %d, want 404", r.status)
	}
}

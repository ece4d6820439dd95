package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"

	"github.com/krm-catalog/krm-catalog/apiclient"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/identity/identitytest"
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
	s, _, client := startRegistryServiceWith(t, vs.Verifier(t))
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
		if _, err := client.AttachBundle(ctx, ref, vs.SignStatement(t, subject, ghIssuer, st), sign.CosignSignPredicateType); err != nil {
			t.Fatal(err)
		}
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

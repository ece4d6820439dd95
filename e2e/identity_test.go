package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
	"github.com/krm-catalog/krm-catalog/store/storetest"
)

// TestAPublisherCannotPassAsAnother replays over HTTP the two ways one publisher could pass as another: adding a kind to
// another publisher's group, and registering a key one cannot sign with.
func TestAPublisherCannotPassAsAnother(t *testing.T) {
	t.Parallel()
	s := startService(t, storetest.NewDatabase(t))
	owner := token(t, s, "example.com")
	squatter := token(t, s, "other.org")
	if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/example-functions/versions/1.0.0", owner, exampleCatalog(t)); r.status != http.StatusCreated {
		t.Fatalf("publish: %d %s", r.status, r.body)
	}

	// a new kind in fn.example.com, published by other.org under a catalog of its own
	v2 := catalogtest.Catalog(catalogtest.Options{Name: "squat", Functions: 1, Publisher: "other.org", Group: "fn.example.com"})
	r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/squat/versions/1.0.0", squatter, v2)
	if r.status != http.StatusForbidden || !strings.Contains(string(r.body), `group \"fn.example.com\" belongs to publisher \"example.com\" (by its name)`) {
		t.Errorf("a kind in another publisher's group: %d %s, want 403 naming the owner", r.status, r.body)
	}
	if r := do(t, http.MethodGet, s.url+"/api/v1/functions/fn.example.com/"+catalogtest.Kind(0), "", nil); r.status != http.StatusNotFound {
		t.Errorf("the refused kind is listed: %d", r.status)
	}
	// its own group is fine
	ok := catalogtest.Catalog(catalogtest.Options{Name: "mine", Functions: 1, Publisher: "other.org", Group: "fn.other.org"})
	if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/mine/versions/1.0.0", squatter, ok); r.status != http.StatusCreated {
		t.Errorf("other.org in fn.other.org: %d %s", r.status, r.body)
	}
	got := do(t, http.MethodGet, s.url+"/api/v1/groups/fn.example.com", "", nil).json(t)
	if got["owner"] != "example.com" || got["via"] != "name" || got["through"] != "example.com" {
		t.Errorf("GET /api/v1/groups/fn.example.com = %v", got)
	}
	groups := do(t, http.MethodGet, s.url+"/api/v1/publishers/other.org/groups", "", nil).json(t)
	if groups["byName"] != "other.org" || len(groups["grants"].([]any)) != 0 {
		t.Errorf("GET /api/v1/publishers/other.org/groups = %v", groups)
	}

	// example.com posts other.org's public key with a proof signed by its own key: refused
	mine, theirs := signtest.KeyPair(t, "example.com's"), signtest.KeyPair(t, "other.org's")
	challenge := func(tok, publisher string) identity.Challenge {
		t.Helper()
		r := do(t, http.MethodPost, s.url+"/api/v1/publishers/"+publisher+"/keys/challenges", tok, nil)
		if r.status != http.StatusCreated {
			t.Fatalf("challenge: %d %s", r.status, r.body)
		}
		var c identity.Challenge
		if err := json.Unmarshal(r.body, &c); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(r.body), `"payload":"krm-catalog key registration challenge v1\npublisher: `+publisher) {
			t.Errorf("the challenge's payload: %s", r.body)
		}
		return c
	}
	put := func(tok string, p identity.Proof) response {
		t.Helper()
		body, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return do(t, http.MethodPut, s.url+"/api/v1/publishers/example.com/keys", tok, body, "Content-Type", "application/json")
	}
	stolen, err := identity.Answer(challenge(owner, "example.com"), "example.com", mine.Signer)
	if err != nil {
		t.Fatal(err)
	}
	stolen.PublicKey = string(theirs.PublicPEM)
	if r := put(owner, stolen); r.status != http.StatusForbidden || !strings.Contains(string(r.body), "no proof of possession") {
		t.Errorf("a key it cannot sign with: %d %s, want 403", r.status, r.body)
	}
	// nor does other.org's own proof, made for other.org's challenge, serve example.com
	theirProof, err := identity.Answer(challenge(squatter, "other.org"), "other.org", theirs.Signer)
	if err != nil {
		t.Fatal(err)
	}
	if r := put(owner, theirProof); r.status != http.StatusForbidden || !strings.Contains(string(r.body), "no open challenge") {
		t.Errorf("another publisher's proof replayed: %d %s, want 403", r.status, r.body)
	}
	if r := do(t, http.MethodPut, s.url+"/api/v1/publishers/example.com/keys", owner, theirs.PublicPEM); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "bare public key is refused") {
		t.Errorf("a bare public key: %d %s, want 400", r.status, r.body)
	}
	keys := do(t, http.MethodGet, s.url+"/api/v1/publishers/example.com/keys", "", nil).json(t)
	if len(keys["keys"].([]any)) != 0 || len(keys["removed"].([]any)) != 0 {
		t.Errorf("a refused key was stored: %v", keys)
	}
	// the holder of the key registers it
	good, err := identity.Answer(challenge(owner, "example.com"), "example.com", mine.Signer)
	if err != nil {
		t.Fatal(err)
	}
	if r := put(owner, good); r.status != http.StatusCreated || !strings.Contains(string(r.body), mine.Public.ID()) {
		t.Errorf("a proven key: %d %s", r.status, r.body)
	}
}

// TestPublisherCommands drives the admin commands on the service's database and add-key over its
// API, as an operator and a publisher would.
func TestPublisherCommands(t *testing.T) {
	// not parallel: add-key reads the key's password from the environment
	t.Setenv("COSIGN_PASSWORD", signtest.Password)
	url := storetest.NewDatabase(t)
	s := startService(t, url)
	db := []string{"--database-url", url}

	code, _, stderr := runCLI(t, append([]string{"token", "create", "--publisher", "example.com "}, db...)...)
	if code != 2 || !strings.Contains(stderr, `publisher name "example.com " must be a lower-case DNS name`) {
		t.Errorf("token create with a trailing space: exit %d, %s", code, stderr)
	}
	tok := token(t, s, "example.com")
	if code, stdout, stderr := runCLI(t, append([]string{"publisher", "grant", "--publisher", "example.com", "--reason", "shared", "fn.shared.io"}, db...)...); code != 0 || !strings.Contains(stdout, "granted group fn.shared.io to example.com") {
		t.Fatalf("publisher grant: exit %d, %s%s", code, stdout, stderr)
	}
	code, stdout, _ := runCLI(t, append([]string{"publisher", "list", "--format", "json"}, db...)...)
	var list struct {
		Grants []struct{ Group, Publisher, Reason string }
	}
	if err := json.Unmarshal([]byte(stdout), &list); code != 0 || err != nil || len(list.Grants) != 1 || list.Grants[0].Group != "fn.shared.io" || list.Grants[0].Reason != "shared" {
		t.Errorf("publisher list: exit %d, %v, %s", code, err, stdout)
	}
	shared := catalogtest.Catalog(catalogtest.Options{Name: "shared", Functions: 1, Group: "fn.shared.io"})
	if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/shared/versions/1.0.0", tok, shared); r.status != http.StatusCreated {
		t.Errorf("publishing in a granted group: %d %s", r.status, r.body)
	}
	if code, stdout, stderr := runCLI(t, append([]string{"publisher", "revoke", "--publisher", "example.com", "fn.shared.io"}, db...)...); code != 0 || !strings.Contains(stdout, "revoked") {
		t.Errorf("publisher revoke: exit %d, %s%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, append([]string{"publisher", "revoke", "--publisher", "example.com", "fn.shared.io"}, db...)...); code != 1 || !strings.Contains(stderr, "no grant") {
		t.Errorf("revoking twice: exit %d, %s", code, stderr)
	}
	// the kind added under the grant resolves until an admin retires it
	fnPath := s.url + "/api/v1/functions/fn.shared.io/" + catalogtest.Kind(0)
	if r := do(t, http.MethodGet, fnPath, "", nil); r.status != http.StatusOK {
		t.Errorf("the revoked grantee's kind before retiring: %d", r.status)
	}
	if code, stdout, stderr := runCLI(t, append([]string{"publisher", "retire", "--reason", "grant revoked", "fn.shared.io", catalogtest.Kind(0)}, db...)...); code != 0 || !strings.Contains(stdout, "retired function fn.shared.io/"+catalogtest.Kind(0)+" of example.com") {
		t.Errorf("publisher retire: exit %d, %s%s", code, stdout, stderr)
	}
	if r := do(t, http.MethodGet, fnPath, "", nil); r.status != http.StatusNotFound {
		t.Errorf("the retired kind: %d, want 404", r.status)
	}

	keys := signtest.KeyPair(t, "cosign.pub")
	dir := t.TempDir()
	priv, pub := dir+"/cosign.key", dir+"/cosign.pub"
	if err := os.WriteFile(priv, keys.PrivatePEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, keys.PublicPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	addKey := []string{"publisher", "add-key", "--server", s.url, "--token", tok, "--publisher", "example.com", "--key"}
	if code, _, stderr := runCLI(t, append(addKey, pub)...); code != 2 || !strings.Contains(stderr, "a public key cannot prove anything") {
		t.Errorf("add-key with a public key: exit %d, %s", code, stderr)
	}
	code, stdout, stderr = runCLI(t, append(addKey, priv)...)
	if code != 0 || stdout != "key "+keys.Public.ID()+" registered for publisher example.com\n" {
		t.Fatalf("add-key: exit %d, %s%s", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI(t, append(addKey, priv)...); code != 0 || !strings.Contains(stdout, "already registered") {
		t.Errorf("add-key again: exit %d, %s", code, stdout)
	}

	entries, err := s.store.AuditLog(t.Context(), 20)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	if want := "key.add function.retire group.revoke catalog.publish group.grant token.create"; strings.Join(actions, " ") != want {
		t.Errorf("audit log: %v, want %s", actions, want)
	}
}

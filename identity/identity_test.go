package identity_test

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

func TestValidateName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"example.com", true},
		{"fn.acme-corp.dev", true},
		{"a1.b2", true},
		{"", false},
		{"example.com ", false}, // a trailing space
		{" example.com", false},
		{"Example.com", false},
		{"com", false}, // one label would own a whole top-level domain
		{"example..com", false},
		{".example.com", false},
		{"example.com.", false},
		{"-a.example.com", false},
		{"a-.example.com", false},
		{"a_b.example.com", false},
		{"exämple.com", false},
		{strings.Repeat("a", 64) + ".com", false},
		{strings.Repeat("a.", 127) + "com", false}, // 257 characters
	} {
		err := identity.ValidateName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "publisher name") {
			t.Errorf("ValidateName(%q): %q does not say what is wrong", tc.name, err)
		}
	}
}

func TestValidateGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		group string
		ok    bool
	}{
		{"fn.example.com", true},
		{"example", true},
		{"", false},
		{"Fn.example.com", false},
		{"fn..example.com", false},
	} {
		if err := identity.ValidateGroup(tc.group); (err == nil) != tc.ok {
			t.Errorf("ValidateGroup(%q) = %v, want ok %v", tc.group, err, tc.ok)
		}
	}
}

// TestCoversAndAncestors: a publisher owns a group by its name alone when its name is one of the
// group's ancestors: the group itself, or a domain above it.
func TestCoversAndAncestors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, group string
		want        bool
	}{
		{"acme.dev", "acme.dev", true},
		{"acme.dev", "fn.acme.dev", true},
		{"acme.dev", "a.b.acme.dev", true},
		{"acme.dev", "notacme.dev", false},
		{"acme.dev", "dev", false},
		{"fn.acme.dev", "acme.dev", false},
	} {
		if got := slices.Contains(identity.Ancestors(tc.group), tc.name); got != tc.want {
			t.Errorf("%q among the ancestors of %q: %v, want %v", tc.name, tc.group, got, tc.want)
		}
	}
	if diff := cmp.Diff([]string{"fn.acme.dev", "acme.dev", "dev"}, identity.Ancestors("fn.acme.dev")); diff != "" {
		t.Errorf("Ancestors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"example"}, identity.Ancestors("example")); diff != "" {
		t.Errorf("Ancestors of one label (-want +got):\n%s", diff)
	}
}

func pemOf(t *testing.T, k sign.PublicKey) string {
	t.Helper()
	p, err := k.PEM()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newSigner(t *testing.T) *sign.Signer {
	t.Helper()
	priv, _, err := sign.GenerateKeyPair([]byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sign.LoadPrivateKey(priv, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newChallenge(t *testing.T, publisher string, expires time.Time) identity.Challenge {
	t.Helper()
	nonce, err := identity.NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	return identity.Challenge{Publisher: publisher, Nonce: nonce, ExpiresAt: expires}
}

func TestChallengeProof(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC)
	c := newChallenge(t, "example.com", now.Add(identity.ChallengeTTL))
	want := "krm-catalog key registration challenge v1\npublisher: example.com\nnonce: " + c.Nonce + "\nexpires: 2026-11-22T21:10:00Z\n"
	if diff := cmp.Diff(want, string(c.Payload())); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	holder, stranger := newSigner(t), newSigner(t)
	proof, err := identity.Answer(c, "example.com", holder)
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.Verify(proof)
	if err != nil || key.ID() != holder.Public().ID() {
		t.Fatalf("Verify of a good proof = %v, %v", key, err)
	}
	if got := pemOf(t, key); got != proof.PublicKey {
		t.Errorf("the canonical PEM of the proven key differs from cosign's:\n%s\n%s", got, proof.PublicKey)
	}

	// the stranger signs with its own key but posts the holder's public key: the key it cannot sign with
	stolen, err := identity.Answer(c, "example.com", stranger)
	if err != nil {
		t.Fatal(err)
	}
	stolen.PublicKey = proof.PublicKey
	other := newChallenge(t, "other.org", c.ExpiresAt)
	forOther, err := identity.Answer(other, "other.org", holder)
	if err != nil {
		t.Fatal(err)
	}
	later := c
	later.ExpiresAt = c.ExpiresAt.Add(time.Minute)
	for _, tc := range []struct {
		name  string
		c     identity.Challenge
		proof identity.Proof
		bad   bool // ErrBadProof rather than a malformed request
	}{
		{"another key's signature", c, stolen, true},
		{"a signature over another publisher's challenge", c, identity.Proof{PublicKey: proof.PublicKey, Nonce: c.Nonce, Signature: forOther.Signature}, true},
		{"a signature over another expiry", later, proof, true},
		{"a bare public key", c, identity.Proof{PublicKey: proof.PublicKey}, false},
		{"not base64", c, identity.Proof{PublicKey: proof.PublicKey, Signature: "%%%"}, false},
		{"not a key", c, identity.Proof{PublicKey: "hello", Signature: proof.Signature}, false},
		{"a signature of other bytes", c, identity.Proof{PublicKey: proof.PublicKey, Signature: base64.StdEncoding.EncodeToString([]byte("x"))}, true},
		{"trailing text after the key", c, identity.Proof{PublicKey: proof.PublicKey + "and some more\n", Nonce: c.Nonce, Signature: proof.Signature}, false},
		{"a second, unproven key", c, identity.Proof{PublicKey: proof.PublicKey + pemOf(t, stranger.Public()), Nonce: c.Nonce, Signature: proof.Signature}, false},
		{"text before the key", c, identity.Proof{PublicKey: "junk\n" + proof.PublicKey, Nonce: c.Nonce, Signature: proof.Signature}, false},
	} {
		_, err := tc.c.Verify(tc.proof)
		if err == nil || errors.Is(err, identity.ErrBadProof) != tc.bad {
			t.Errorf("%s: Verify = %v, want an error (ErrBadProof %v)", tc.name, err, tc.bad)
		}
	}
}

func TestAnswerRefusesForeignChallenges(t *testing.T) {
	t.Parallel()
	signer := newSigner(t)
	good := newChallenge(t, "example.com", time.Now())
	for _, tc := range []struct {
		name string
		edit func(*identity.Challenge)
	}{
		{"another publisher", func(c *identity.Challenge) { c.Publisher = "other.org" }},
		{"a nonce with a line break", func(c *identity.Challenge) { c.Nonce += "\npublisher: other.org" }},
		{"a short nonce", func(c *identity.Challenge) { c.Nonce = "abc" }},
		{"no expiry", func(c *identity.Challenge) { c.ExpiresAt = time.Time{} }},
	} {
		c := good
		tc.edit(&c)
		if _, err := identity.Answer(c, "example.com", signer); err == nil {
			t.Errorf("%s: signed", tc.name)
		}
	}
}

func TestCatalogDomain(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"example-functions":   "",
		"example.com":         "example.com",
		"example.com-tools":   "example.com",
		"fn.example.com-v2":   "fn.example.com",
		"a.b-c.d-e":           "a.b-c.d",
		"my-team.example.dev": "my-team.example.dev",
	} {
		got, ok := identity.CatalogDomain(name)
		if got != want || ok != (want != "") {
			t.Errorf("CatalogDomain(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}

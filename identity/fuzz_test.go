package identity_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/identity"
)

// FuzzValidateName: a name that passes owns groups by itself, so it must be exactly what the
// rules say, and Covers must agree that the name covers itself.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"example.com", "example.com ", "com", "a-.b", "xn--bcher-kva.example", "A.b", "a..b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if identity.ValidateName(name) != nil {
			return
		}
		if identity.ValidateGroup(name) != nil {
			t.Errorf("%q is a publisher name but not a group", name)
		}
		if !slices.Contains(identity.Ancestors(name), name) || slices.Contains(identity.Ancestors("x"+name), name) {
			t.Errorf("Ancestors disagrees on %q", name)
		}
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
				t.Errorf("%q passed with %q", name, r)
			}
		}
	})
}

// FuzzVerify: a posted proof is outside input; nothing in it may verify without the private key.
func FuzzVerify(f *testing.F) {
	f.Add("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n", "nonce", "MEUCIQ==")
	f.Add("", "", "")
	c := identity.Challenge{Publisher: "example.com", Nonce: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", ExpiresAt: time.Unix(0, 0)}
	f.Fuzz(func(t *testing.T, key, nonce, sig string) {
		if _, err := c.Verify(identity.Proof{PublicKey: key, Nonce: nonce, Signature: sig}); err == nil {
			t.Errorf("a proof verified without the private key: %q %q", key, sig)
		}
	})
}

// FuzzPattern: a pattern that passes has a fixed issuer and, before any `*`, a URL's host and
// first path segment, and it matches the subject it stands for with every `*` removed.
func FuzzPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"https://token.actions.githubusercontent.com", "https://github.com/acme/fns/.github/workflows/release.yml@refs/tags/*"},
		{"https://accounts.example", "alice@example.com"},
		{"https://x", "*"},
		{"https://x", "https://h/*"},
		{"https://x", "https://h/a*/b"},
		{"https://x", "https://h/a/(.*"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, issuer, subject string) {
		p := identity.Pattern{Issuer: issuer, Subject: subject}
		if p.Validate() != nil {
			return
		}
		if strings.Contains(issuer, "*") {
			t.Errorf("issuer %q with a star passed", issuer)
		}
		if i := strings.IndexByte(subject, '*'); i >= 0 && strings.Count(subject[:i], "/") < 3 {
			t.Errorf("subject %q passed with a star before a host and a path segment", subject)
		}
		if !p.Matches(issuer, strings.ReplaceAll(subject, "*", "")) {
			t.Errorf("%v does not match its own subject", p)
		}
		if p.Matches(issuer+"x", subject) {
			t.Errorf("%v matches another issuer", p)
		}
	})
}

// FuzzParseBundle: a bundle from a registry or a request is outside input.
func FuzzParseBundle(f *testing.F) {
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = identity.ParseBundle(data)
	})
}

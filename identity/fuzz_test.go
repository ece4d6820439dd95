package identity_test

import (
	"slices"
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

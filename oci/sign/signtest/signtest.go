// Package signtest makes cosign key pairs for tests.
package signtest

import (
	"testing"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// Password encrypts the private keys KeyPair makes.
const Password = "test-password"

// Keys is a cosign key pair: the PEM files and their loaded forms.
type Keys struct {
	PrivatePEM, PublicPEM []byte
	Signer                *sign.Signer
	Public                sign.PublicKey
}

// KeyPair makes a cosign key pair (the format `cosign generate-key-pair` writes, encrypted with
// Password); name labels the public key in messages.
func KeyPair(t testing.TB, name string) Keys {
	t.Helper()
	priv, pub, err := sign.GenerateKeyPair([]byte(Password))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sign.LoadPrivateKey(priv, []byte(Password))
	if err != nil {
		t.Fatal(err)
	}
	k, err := sign.ParsePublicKey(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	return Keys{PrivatePEM: priv, PublicPEM: pub, Signer: s, Public: k}
}

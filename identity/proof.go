package identity

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// ChallengeTTL is how long a key registration challenge can be answered: long enough to type a
// key's password, short enough that a leaked challenge is soon worthless.
const ChallengeTTL = 10 * time.Minute

// challengeHeader starts every challenge payload. It is plain text, not JSON, so that a signature
// over a challenge can never pass for a cosign signature payload (a JSON document), and the other
// way round.
const challengeHeader = "krm-catalog key registration challenge v1"

// Challenge is what the service issues to a publisher that wants to register a key: a nonce,
// bound to the publisher, that must be signed before it expires and can be used once.
type Challenge struct {
	Publisher string    `json:"publisher"`
	Nonce     string    `json:"nonce"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// NewNonce returns a fresh 256-bit nonce for a challenge, base64url without padding.
func NewNonce() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("new nonce: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Payload is the exact bytes the key's private half signs. Both sides build it from the
// challenge's fields, so a client never signs bytes a server chose.
func (c Challenge) Payload() []byte {
	return []byte(challengeHeader + "\npublisher: " + c.Publisher + "\nnonce: " + c.Nonce +
		"\nexpires: " + c.ExpiresAt.UTC().Format(time.RFC3339) + "\n")
}

// Check refuses a challenge a client should not sign: one for another publisher, or with a
// nonce or expiry that could smuggle other lines into the payload.
func (c Challenge) Check(publisher string) error {
	if c.Publisher != publisher {
		return fmt.Errorf("the challenge is for publisher %q, not %q", c.Publisher, publisher)
	}
	if n, err := base64.RawURLEncoding.DecodeString(c.Nonce); err != nil || len(n) < 16 || strings.ContainsAny(c.Nonce, "\n\r") {
		return fmt.Errorf("the challenge's nonce %q is not 16 or more base64url bytes", c.Nonce)
	}
	if c.ExpiresAt.IsZero() {
		return fmt.Errorf("the challenge has no expiry")
	}
	return nil
}

// Proof answers a challenge: the public key to register, the nonce, and the signature (base64)
// of the challenge's payload made with the key's private half, as cosign signs (over the
// payload's SHA-256).
type Proof struct {
	PublicKey string `json:"publicKey"`
	Nonce     string `json:"nonce"`
	Signature string `json:"signature"`
}

// ErrBadProof is a proof that does not show possession of the key: a signature that does not
// verify with the posted key.
var ErrBadProof = errors.New("the signature does not verify with the posted key")

// Verify checks that p's signature over c's payload verifies with p's public key, and returns
// the key. A malformed key or signature is a plain error; a signature that does not verify is
// ErrBadProof (with the key, to name it). It does not check the nonce or the expiry: the store
// does, when it consumes the challenge.
func (c Challenge) Verify(p Proof) (sign.PublicKey, error) {
	key, err := sign.ParseOnePublicKey("posted key", []byte(p.PublicKey))
	if err != nil {
		return sign.PublicKey{}, fmt.Errorf("publicKey must be exactly one PEM public key, as in cosign.pub: %w", err)
	}
	sig, err := base64.StdEncoding.DecodeString(p.Signature)
	if err != nil || len(sig) == 0 {
		return sign.PublicKey{}, fmt.Errorf("signature must be a base64 signature")
	}
	if err := key.Verify(sig, c.Payload()); err != nil {
		return key, ErrBadProof // the key, to name it
	}
	return key, nil
}

// Answer signs c with signer, after checking that c is a challenge for publisher.
func Answer(c Challenge, publisher string, signer *sign.Signer) (Proof, error) {
	if err := c.Check(publisher); err != nil {
		return Proof{}, err
	}
	der, err := x509.MarshalPKIXPublicKey(signer.Public().Key)
	if err != nil {
		return Proof{}, fmt.Errorf("encode the public key: %w", err)
	}
	publicPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	sig, err := signer.Sign(c.Payload())
	if err != nil {
		return Proof{}, fmt.Errorf("sign the challenge: %w", err)
	}
	return Proof{PublicKey: string(publicPEM), Nonce: c.Nonce, Signature: base64.StdEncoding.EncodeToString(sig)}, nil
}

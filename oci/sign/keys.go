package sign

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"
)

// PasswordEnv is the environment variable cosign reads a key's password from.
const PasswordEnv = "COSIGN_PASSWORD"

// Signer signs with a cosign private key.
type Signer struct {
	sv  signature.SignerVerifier
	pub PublicKey
}

// The PEM types of cosign's key files: what `cosign generate-key-pair` writes, and its older name.
const (
	sigstorePrivateKeyPEM = "ENCRYPTED SIGSTORE PRIVATE KEY"
	cosignPrivateKeyPEM   = "ENCRYPTED COSIGN PRIVATE KEY"
)

// LoadPrivateKey decrypts a cosign key file ("ENCRYPTED SIGSTORE PRIVATE KEY" or the older
// "ENCRYPTED COSIGN PRIVATE KEY" PEM) with its password. The format is cosign's: a PKCS #8 key
// sealed with go-securesystemslib's scrypt and secretbox envelope. It is read here, not through
// cosign's package, whose import graph (rekor, TUF, OpenAPI validators) costs every krm-catalog
// command milliseconds of start-up.
func LoadPrivateKey(pemBytes, password []byte) (*Signer, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("load cosign private key: not a PEM file")
	}
	if block.Type != sigstorePrivateKeyPEM && block.Type != cosignPrivateKeyPEM {
		return nil, fmt.Errorf("load cosign private key: PEM type %q is not a cosign private key", block.Type)
	}
	der, err := encrypted.Decrypt(block.Bytes, password)
	if err != nil {
		return nil, fmt.Errorf("load cosign private key: decrypt (wrong password?): %w", err)
	}
	priv, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("load cosign private key: %w", err)
	}
	// ED25519 keys sign in the pre-hashed mode, as cosign does
	sv, err := signature.LoadDefaultSignerVerifier(priv, options.WithED25519ph())
	if err != nil {
		return nil, fmt.Errorf("load cosign private key: %w", err)
	}
	pub, err := sv.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("load cosign private key: %w", err)
	}
	pk, err := NewPublicKey("private key", pub)
	if err != nil {
		return nil, err
	}
	return &Signer{sv: sv, pub: pk}, nil
}

// LoadPrivateKeyFile reads and decrypts a cosign key file.
func LoadPrivateKeyFile(path string, password []byte) (*Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load cosign private key: %w", err)
	}
	s, err := LoadPrivateKey(b, password)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.pub.Name = path
	return s, nil
}

// Sign signs payload: a signature over its SHA-256 digest, as cosign makes.
func (s *Signer) Sign(payload []byte) ([]byte, error) {
	sig, err := s.sv.SignMessage(bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return sig, nil
}

// Public is the signer's public key.
func (s *Signer) Public() PublicKey { return s.pub }

// GenerateKeyPair makes a cosign key pair, the private key encrypted with password, in the PEM
// formats `cosign generate-key-pair` writes.
func GenerateKeyPair(password []byte) (privatePEM, publicPEM []byte, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key pair: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key pair: %w", err)
	}
	if password == nil {
		password = []byte{}
	}
	sealed, err := encrypted.Encrypt(der, password)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key pair: %w", err)
	}
	publicPEM, err = cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("generate key pair: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: sigstorePrivateKeyPEM, Bytes: sealed}), publicPEM, nil
}

// PublicKey is a public key the user trusts.
type PublicKey struct {
	// Name says where the key came from, for messages: usually its file.
	Name     string
	Key      crypto.PublicKey
	verifier signature.Verifier
}

// NewPublicKey wraps a public key for verification the way cosign verifies with it (ED25519 keys
// in cosign's pre-hashed mode).
func NewPublicKey(name string, pub crypto.PublicKey) (PublicKey, error) {
	v, err := signature.LoadDefaultVerifier(pub, options.WithED25519ph())
	if err != nil {
		return PublicKey{}, fmt.Errorf("public key %s: %w", name, err)
	}
	return PublicKey{Name: name, Key: pub, verifier: v}, nil
}

// ParsePublicKey reads a PEM public key, as in cosign.pub.
func ParsePublicKey(name string, pemBytes []byte) (PublicKey, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return PublicKey{}, fmt.Errorf("public key %s: %w", name, err)
	}
	return NewPublicKey(name, pub)
}

// ParseOnePublicKey reads exactly one PEM public key: one "PUBLIC KEY" block and nothing else but
// white space. What a service stores as a proven key must be only the key that was proven: a
// second block, or text around the block, would travel with it unproven.
func ParseOnePublicKey(name string, pemBytes []byte) (PublicKey, error) {
	block, rest := pem.Decode(pemBytes)
	switch {
	case block == nil:
		return PublicKey{}, fmt.Errorf("public key %s: not a PEM block", name)
	case block.Type != "PUBLIC KEY":
		return PublicKey{}, fmt.Errorf("public key %s: PEM type %q, want \"PUBLIC KEY\"", name, block.Type)
	case len(block.Headers) > 0:
		return PublicKey{}, fmt.Errorf("public key %s: PEM headers are not accepted", name)
	case len(bytes.TrimSpace(rest)) > 0:
		return PublicKey{}, fmt.Errorf("public key %s: text after the key; send exactly one key", name)
	case len(bytes.TrimSpace(pemBytes[:bytes.Index(pemBytes, []byte("-----BEGIN"))])) > 0:
		return PublicKey{}, fmt.Errorf("public key %s: text before the key; send exactly one key", name)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return PublicKey{}, fmt.Errorf("public key %s: %w", name, err)
	}
	return NewPublicKey(name, pub)
}

// PEM is the key's canonical PEM encoding: one "PUBLIC KEY" block of its DER encoding.
func (k PublicKey) PEM() (string, error) {
	der, err := x509.MarshalPKIXPublicKey(k.Key)
	if err != nil {
		return "", fmt.Errorf("encode public key %s: %w", k.Name, err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}

// LoadPublicKeyFile reads a PEM public key file.
func LoadPublicKeyFile(path string) (PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return PublicKey{}, fmt.Errorf("public key: %w", err)
	}
	return ParsePublicKey(path, b)
}

// ID is the SHA-256 of the key's DER encoding, in hex: how keys are told apart in output.
func (k PublicKey) ID() string {
	der, err := x509.MarshalPKIXPublicKey(k.Key)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// String names the key by where it came from and its ID.
func (k PublicKey) String() string {
	id := k.ID()
	if len(id) > 12 {
		id = id[:12]
	}
	return fmt.Sprintf("%s (%s)", k.Name, id)
}

// Verify checks sig, a signature made as cosign signs (over the SHA-256 of payload), over payload.
func (k PublicKey) Verify(sig, payload []byte) error { return k.verify(sig, payload) }

// verify checks sig over payload.
func (k PublicKey) verify(sig, payload []byte) error {
	if k.verifier == nil {
		return errors.New("public key not loaded")
	}
	return k.verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(payload))
}

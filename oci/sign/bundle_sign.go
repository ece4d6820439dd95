package sign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	intotov1 "github.com/in-toto/attestation/go/v1"
	"github.com/opencontainers/go-digest"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// CosignSignPredicateType is the predicate type of the in-toto statement cosign v3 signs for an
// image: the statement says "this digest is signed", nothing more.
const CosignSignPredicateType = "https://sigstore.dev/cosign/sign/v1"

// InTotoPayloadType is the DSSE payload type of an in-toto statement.
const InTotoPayloadType = "application/vnd.in-toto+json"

// SignBundle makes the sigstore bundle `cosign sign --key` of cosign v3 makes without a
// transparency log: a DSSE envelope over an in-toto statement whose one subject is d and whose
// predicate type is CosignSignPredicateType, with the key's hint as verification material. It is
// built with sigstore-go's signer, as cosign builds it.
func (s *Signer) SignBundle(ctx context.Context, d digest.Digest) ([]byte, error) {
	statement := &intotov1.Statement{
		Type:          intotov1.StatementTypeUri,
		Subject:       []*intotov1.ResourceDescriptor{{Digest: map[string]string{d.Algorithm().String(): d.Encoded()}}},
		PredicateType: CosignSignPredicateType,
		Predicate:     &structpb.Struct{},
	}
	payload, err := protojson.Marshal(statement)
	if err != nil {
		return nil, fmt.Errorf("sign bundle: %w", err)
	}
	kp, err := newKeypair(s.sv)
	if err != nil {
		return nil, fmt.Errorf("sign bundle: %w", err)
	}
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: payload, PayloadType: InTotoPayloadType}, kp, sgsign.BundleOptions{Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("sign bundle: %w", err)
	}
	b, err := (&bundle.Bundle{Bundle: pb}).MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("sign bundle: %w", err)
	}
	return b, nil
}

// keypair adapts a cosign signer to sigstore-go's Keypair, as cosign v3 does internally: the hint
// is the base64 SHA-256 of the DER public key.
type keypair struct {
	sv   signature.SignerVerifier
	pub  crypto.PublicKey
	hint []byte
	alg  signature.AlgorithmDetails
}

func newKeypair(sv signature.SignerVerifier) (*keypair, error) {
	pub, err := sv.PublicKey()
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	alg, err := signature.GetDefaultAlgorithmDetails(pub, options.WithED25519ph())
	if err != nil {
		return nil, err
	}
	return &keypair{sv: sv, pub: pub, hint: []byte(base64.StdEncoding.EncodeToString(sum[:])), alg: alg}, nil
}

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.alg.GetProtoHashType() }
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.alg.GetSignatureAlgorithm()
}
func (k *keypair) GetHint() []byte                { return k.hint }
func (k *keypair) GetPublicKey() crypto.PublicKey { return k.pub }

func (k *keypair) GetKeyAlgorithm() string {
	switch k.alg.GetKeyType() {
	case signature.ECDSA:
		return "ECDSA"
	case signature.RSA:
		return "RSA"
	case signature.ED25519:
		return "ED25519"
	}
	return ""
}

func (k *keypair) GetPublicKeyPem() (string, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.pub)
	return string(b), err
}

// SignData signs data, returning the signature and the digest that was signed.
func (k *keypair) SignData(ctx context.Context, data []byte) ([]byte, []byte, error) {
	opts := []signature.SignOption{options.WithContext(ctx)}
	var sum []byte
	if h := k.alg.GetHashType(); h != 0 {
		hh := h.New()
		hh.Write(data)
		sum = hh.Sum(nil)
		opts = append(opts, options.WithDigest(sum))
	}
	sig, err := k.sv.SignMessage(bytes.NewReader(data), opts...)
	if err != nil {
		return nil, nil, err
	}
	return sig, sum, nil
}

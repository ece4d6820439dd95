package sign

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	intotov1 "github.com/in-toto/attestation/go/v1"
	"github.com/opencontainers/go-digest"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
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
// predicate type is CosignSignPredicateType, with the key's hint (the base64 SHA-256 of its DER
// public key) as verification material. cosign v3 and sigstore-go verify it (the tests check
// both).
func (s *Signer) SignBundle(ctx context.Context, d digest.Digest) ([]byte, error) {
	payload, err := cosignStatement(d)
	if err != nil {
		return nil, fmt.Errorf("sign bundle: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(s.pub.Key)
	if err != nil {
		return nil, fmt.Errorf("sign bundle: %w", err)
	}
	hint := sha256.Sum256(der)
	sig, err := s.signPrehashed(ctx, pae(InTotoPayloadType, payload))
	if err != nil {
		return nil, fmt.Errorf("sign bundle: %w", err)
	}
	b, err := protojson.Marshal(&protobundle.Bundle{
		MediaType: BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{
				PublicKey: &protocommon.PublicKeyIdentifier{Hint: base64.StdEncoding.EncodeToString(hint[:])},
			},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: InTotoPayloadType, Signatures: []*protodsse.Signature{{Sig: sig}},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("sign bundle: %w", err)
	}
	return b, nil
}

// cosignStatement is the in-toto statement cosign v3 signs for an image: one subject, d, and the
// predicate type CosignSignPredicateType with an empty predicate.
func cosignStatement(d digest.Digest) ([]byte, error) {
	return protojson.Marshal(&intotov1.Statement{
		Type:          intotov1.StatementTypeUri,
		Subject:       []*intotov1.ResourceDescriptor{{Digest: map[string]string{d.Algorithm().String(): d.Encoded()}}},
		PredicateType: CosignSignPredicateType,
		Predicate:     &structpb.Struct{},
	})
}

// signPrehashed signs data as sigstore-go's signer does for cosign: the key's default hash over
// the data, passed as the digest to sign (ED25519 keys sign in their pre-hashed mode).
func (s *Signer) signPrehashed(ctx context.Context, data []byte) ([]byte, error) {
	alg, err := signature.GetDefaultAlgorithmDetails(s.pub.Key, options.WithED25519ph())
	if err != nil {
		return nil, err
	}
	opts := []signature.SignOption{options.WithContext(ctx)}
	if h := alg.GetHashType(); h != 0 {
		hh := h.New()
		hh.Write(data)
		opts = append(opts, options.WithDigest(hh.Sum(nil)))
	}
	return s.sv.SignMessage(bytes.NewReader(data), opts...)
}

package sign

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"

	"github.com/opencontainers/go-digest"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// The annotations cosign puts beside a legacy signature made keylessly: the Fulcio certificate
// and chain, the Rekor entry with its signed entry timestamp, and an RFC 3161 timestamp.
const (
	CertificateAnnotation = "dev.sigstore.cosign/certificate"
	ChainAnnotation       = "dev.sigstore.cosign/chain"
	RekorBundleAnnotation = "dev.sigstore.cosign/bundle"
	TimestampAnnotation   = "dev.sigstore.cosign/rfc3161timestamp"
)

// rekorBundle is the value of RekorBundleAnnotation.
type rekorBundle struct {
	SignedEntryTimestamp []byte `json:"SignedEntryTimestamp"`
	Payload              struct {
		Body           []byte `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	} `json:"Payload"`
}

// VerifyLegacy checks a legacy signature layer: by a key as VerifyPayload does, or, when
// annotations hold a certificate, keylessly: the signature, certificate, Rekor entry and
// timestamps as a v0.1 bundle through sigstore-go, the certificate's identity against t, and the
// payload's digest against want.
func VerifyLegacy(t Trust, payloadBytes []byte, annotations map[string]string, want digest.Digest) (SignedBy, error) {
	if annotations[CertificateAnnotation] == "" {
		k, err := VerifyPayload(t.Keys, payloadBytes, annotations[SignatureAnnotation], want)
		if err != nil {
			return SignedBy{}, err
		}
		return SignedBy{Key: &k}, nil
	}
	b, err := LegacyBundle(payloadBytes, annotations)
	if err != nil {
		return SignedBy{}, err
	}
	by, err := b.verifyCertificate(t, verify.WithArtifact(bytes.NewReader(payloadBytes)))
	if err != nil {
		return SignedBy{}, err
	}
	p, err := ParsePayload(payloadBytes)
	if err != nil {
		return SignedBy{}, err
	}
	if p.Digest != want {
		return SignedBy{}, fmt.Errorf("%w: signed by %s over %s, not %s", ErrOtherDigest, by, p.Digest, want)
	}
	return by, nil
}

// LegacyBundle reads a keyless legacy signature (the payload and its layer's annotations) as the
// v0.1 sigstore bundle it amounts to: a message signature over the payload with the certificate,
// the Rekor entry and its signed entry timestamp, and the RFC 3161 timestamp when there is one.
func LegacyBundle(payloadBytes []byte, annotations map[string]string) (*Bundle, error) {
	sig, err := base64.StdEncoding.DecodeString(annotations[SignatureAnnotation])
	if err != nil {
		return nil, fmt.Errorf("%w: signature annotation is not base64: %v", ErrMalformed, err)
	}
	var chain []*protocommon.X509Certificate
	rest := []byte(annotations[CertificateAnnotation] + "\n" + annotations[ChainAnnotation])
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return nil, fmt.Errorf("%w: certificate annotation: %v", ErrMalformed, err)
		}
		chain = append(chain, &protocommon.X509Certificate{RawBytes: block.Bytes})
	}
	if len(chain) == 0 {
		return nil, fmt.Errorf("%w: the certificate annotation holds no PEM certificate", ErrMalformed)
	}
	sum := sha256.Sum256(payloadBytes)
	vm := &protobundle.VerificationMaterial{
		Content: &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: &protocommon.X509CertificateChain{Certificates: chain[:1]}},
	}
	if rb := annotations[RekorBundleAnnotation]; rb != "" {
		tle, err := legacyTlogEntry([]byte(rb))
		if err != nil {
			return nil, err
		}
		vm.TlogEntries = []*protorekor.TransparencyLogEntry{tle}
	}
	if ts := annotations[TimestampAnnotation]; ts != "" {
		var v struct {
			SignedRFC3161Timestamp []byte `json:"SignedRFC3161Timestamp"`
		}
		if err := json.Unmarshal([]byte(ts), &v); err != nil {
			return nil, fmt.Errorf("%w: timestamp annotation: %v", ErrMalformed, err)
		}
		vm.TimestampVerificationData = &protobundle.TimestampVerificationData{
			Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: v.SignedRFC3161Timestamp}},
		}
	}
	pb := &protobundle.Bundle{
		MediaType:            bundleMediaTypeBase + "+json;version=0.1",
		VerificationMaterial: vm,
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum[:]},
			Signature:     sig,
		}},
	}
	if err := checkBundle(pb); err != nil {
		return nil, fmt.Errorf("%w: legacy signature: %v", ErrMalformed, err)
	}
	return &Bundle{pb: pb}, nil
}

// legacyTlogEntry reads cosign's Rekor bundle annotation as a transparency-log entry.
func legacyTlogEntry(raw []byte) (*protorekor.TransparencyLogEntry, error) {
	var rb rekorBundle
	if err := json.Unmarshal(raw, &rb); err != nil {
		return nil, fmt.Errorf("%w: rekor bundle annotation: %v", ErrMalformed, err)
	}
	logID, err := hex.DecodeString(rb.Payload.LogID)
	if err != nil {
		return nil, fmt.Errorf("%w: rekor bundle log ID: %v", ErrMalformed, err)
	}
	var kv struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(rb.Payload.Body, &kv); err != nil {
		return nil, fmt.Errorf("%w: rekor entry body: %v", ErrMalformed, err)
	}
	return &protorekor.TransparencyLogEntry{
		LogIndex:          rb.Payload.LogIndex,
		LogId:             &protocommon.LogId{KeyId: logID},
		KindVersion:       &protorekor.KindVersion{Kind: kv.Kind, Version: kv.APIVersion},
		IntegratedTime:    rb.Payload.IntegratedTime,
		InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp},
		CanonicalizedBody: rb.Payload.Body,
	}, nil
}

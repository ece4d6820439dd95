package sign

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore/pkg/signature/options"
	"golang.org/x/mod/semver"
	"google.golang.org/protobuf/encoding/protojson"
)

// BundleMediaType is the artifactType of the referrer cosign v3 stores a sigstore bundle in, and
// the media type of its one layer.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// maxBundleBytes bounds a bundle: one signed by a key is a few KB.
const maxBundleBytes = 1 << 20

// Bounds on what a statement may list, as sigstore-go sets them: a bundle comes from a registry.
const (
	maxStatementSubjects = 1024
	maxSubjectDigests    = 32
)

// Bundle is a parsed sigstore bundle.
//
// A bundle signed by a key is checked here, on the protobuf-specs types: no certificate, log or
// timestamp takes part, and the tests hold this code to sigstore-go both ways. A bundle signed with
// a certificate is checked by sigstore-go (VerifyBundleTrust).
type Bundle struct {
	pb *protobundle.Bundle
}

// ParseBundle reads a sigstore bundle (the protobuf-specs JSON form) and checks its structure as
// sigstore-go does: a known version (v0.1 to v0.3), a DSSE envelope or message signature, and
// verification material.
func ParseBundle(data []byte) (*Bundle, error) {
	if len(data) > maxBundleBytes {
		return nil, fmt.Errorf("%w: bundle is %d bytes, above %d", ErrMalformed, len(data), maxBundleBytes)
	}
	pb := new(protobundle.Bundle)
	if err := protojson.Unmarshal(data, pb); err != nil {
		return nil, fmt.Errorf("%w: bundle: %v", ErrMalformed, err)
	}
	if err := checkBundle(pb); err != nil {
		return nil, fmt.Errorf("%w: bundle: %v", ErrMalformed, err)
	}
	return &Bundle{pb: pb}, nil
}

const bundleMediaTypeBase = "application/vnd.dev.sigstore.bundle"

// bundleVersion is the version a bundle media type names: the v0.1–v0.3 forms with a version
// parameter, or the form with the version in the name (v0.3 on).
func bundleVersion(mediaType string) (string, error) {
	switch mediaType {
	case bundleMediaTypeBase + "+json;version=0.1":
		return "v0.1", nil
	case bundleMediaTypeBase + "+json;version=0.2":
		return "v0.2", nil
	case bundleMediaTypeBase + "+json;version=0.3":
		return "v0.3", nil
	}
	v, ok := strings.CutPrefix(mediaType, bundleMediaTypeBase+".")
	if v, ok2 := strings.CutSuffix(v, "+json"); ok && ok2 && semver.IsValid(v) {
		return v, nil
	}
	return "", fmt.Errorf("unsupported media type %q", mediaType)
}

func checkBundle(pb *protobundle.Bundle) error {
	v, err := bundleVersion(pb.GetMediaType())
	if err != nil {
		return err
	}
	if semver.Compare(v, "v0.1") < 0 || semver.Compare(v, "v0.4") >= 0 {
		return fmt.Errorf("bundle version %s is not supported", v)
	}
	switch pb.GetContent().(type) {
	case *protobundle.Bundle_DsseEnvelope, *protobundle.Bundle_MessageSignature:
	default:
		return errors.New("no DSSE envelope or message signature")
	}
	vm := pb.GetVerificationMaterial()
	switch vm.GetContent().(type) {
	case *protobundle.VerificationMaterial_PublicKey, *protobundle.VerificationMaterial_Certificate:
	case *protobundle.VerificationMaterial_X509CertificateChain:
		if semver.Compare(v, "v0.3") >= 0 {
			return errors.New("verification material cannot be an X.509 certificate chain from bundle v0.3 on")
		}
	default:
		return errors.New("missing verification material")
	}
	return nil
}

// VerifyBundle checks that b is a signature over want by one of keys, offline: no transparency
// log, no timestamp, no certificate. It returns the key that verified. A bundle that verifies under
// a trusted key but signs another digest is ErrOtherDigest.
func VerifyBundle(b *Bundle, keys []PublicKey, want digest.Digest) (PublicKey, error) {
	if b.pb.GetVerificationMaterial().GetPublicKey() == nil {
		// a certificate names an identity, to be checked against a certificate authority: keyless
		return PublicKey{}, fmt.Errorf("%w: the bundle is signed with a certificate, not a key", ErrUntrusted)
	}
	var other error
	for _, k := range keys {
		subjects, predicateType, err := b.verify(k)
		if err != nil {
			if errors.Is(err, ErrMalformed) {
				return PublicKey{}, err
			}
			continue
		}
		if !containsDigest(subjects, want) {
			if len(subjects) > 0 {
				other = fmt.Errorf("%w: signed by %s over %s, not %s", ErrOtherDigest, k, subjects[0], want)
			}
			continue
		}
		// An in-toto statement of another predicate (provenance, an SBOM) by the same key is an
		// attestation about the artifact, not the signature cosign makes.
		if predicateType != "" && predicateType != CosignSignPredicateType {
			return PublicKey{}, fmt.Errorf("%w: the bundle is a %q attestation, not a cosign signature", ErrMalformed, predicateType)
		}
		return k, nil
	}
	if other != nil {
		return PublicKey{}, other
	}
	return PublicKey{}, ErrUntrusted
}

// verify checks the bundle's signature with k and returns the digests it signs, and for a DSSE
// envelope the statement's predicate type. Only a verified signature's content is read.
func (b *Bundle) verify(k PublicKey) ([]digest.Digest, string, error) {
	if k.verifier == nil {
		return nil, "", errors.New("public key not loaded")
	}
	if ms := b.pb.GetMessageSignature(); ms != nil {
		// the signature is over the digest: the claimed digest is what it verifies against
		md := ms.GetMessageDigest()
		if md == nil {
			return nil, "", fmt.Errorf("%w: message signature without a digest", ErrMalformed)
		}
		alg := strings.ToLower(strings.Replace(md.GetAlgorithm().String(), "SHA2_", "SHA", 1))
		if err := k.verifier.VerifySignature(bytes.NewReader(ms.GetSignature()), bytes.NewReader(nil), options.WithDigest(md.GetDigest())); err != nil {
			return nil, "", err
		}
		return []digest.Digest{digest.NewDigestFromEncoded(digest.Algorithm(alg), hex.EncodeToString(md.GetDigest()))}, "", nil
	}
	env := b.pb.GetDsseEnvelope()
	// a DSSE envelope in a sigstore bundle holds exactly one signature
	if len(env.GetSignatures()) != 1 {
		return nil, "", fmt.Errorf("%w: a DSSE envelope holds %d signatures, not 1", ErrMalformed, len(env.GetSignatures()))
	}
	if err := k.verify(env.GetSignatures()[0].GetSig(), pae(env.GetPayloadType(), env.GetPayload())); err != nil {
		return nil, "", err
	}
	return statementSubjects(env.GetPayloadType(), env.GetPayload())
}

// statementSubjects reads the subjects and predicate type of an in-toto statement; only what
// verification needs, the predicate itself may be large.
func statementSubjects(payloadType string, payload []byte) ([]digest.Digest, string, error) {
	if payloadType != InTotoPayloadType {
		return nil, "", fmt.Errorf("%w: DSSE payload type %q, not %q", ErrMalformed, payloadType, InTotoPayloadType)
	}
	var st struct {
		PredicateType string `json:"predicateType"`
		Subject       []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
	}
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, "", fmt.Errorf("%w: in-toto statement: %v", ErrMalformed, err)
	}
	if len(st.Subject) > maxStatementSubjects {
		return nil, "", fmt.Errorf("%w: %d subjects, above %d", ErrMalformed, len(st.Subject), maxStatementSubjects)
	}
	var out []digest.Digest
	for _, s := range st.Subject {
		if len(s.Digest) > maxSubjectDigests {
			return nil, "", fmt.Errorf("%w: a subject with %d digests, above %d", ErrMalformed, len(s.Digest), maxSubjectDigests)
		}
		for alg, h := range s.Digest {
			if _, err := hex.DecodeString(h); err != nil {
				return nil, "", fmt.Errorf("%w: subject digest %s:%s: %v", ErrMalformed, alg, h, err)
			}
			out = append(out, digest.NewDigestFromEncoded(digest.Algorithm(alg), strings.ToLower(h)))
		}
	}
	return out, st.PredicateType, nil
}

// statementPredicate is the predicate of a verified statement, as JSON.
func statementPredicate(payload []byte) ([]byte, error) {
	var st struct {
		Predicate json.RawMessage `json:"predicate"`
	}
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, fmt.Errorf("%w: in-toto statement: %v", ErrMalformed, err)
	}
	return st.Predicate, nil
}

func containsDigest(ds []digest.Digest, want digest.Digest) bool {
	for _, d := range ds {
		if d.Algorithm() == want.Algorithm() && strings.EqualFold(d.Encoded(), want.Encoded()) {
			return true
		}
	}
	return false
}

// pae is DSSE's pre-authentication encoding: what a DSSE signature signs.
func pae(payloadType string, payload []byte) []byte {
	return fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(payload), payload)
}

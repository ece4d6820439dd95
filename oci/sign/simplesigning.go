package sign

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// The legacy cosign signature format: an image manifest tagged sha256-<hex>.sig in the signed
// artifact's repository, one layer per signature, each layer a simple-signing payload with the
// base64 signature in an annotation.
const (
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	SignatureAnnotation    = "dev.cosignproject.cosign/signature"
	// maxPayloadBytes bounds a payload: real ones are a few hundred bytes.
	maxPayloadBytes = 1 << 20
)

// LegacyTag is the tag cosign's legacy format stores signatures of d under.
func LegacyTag(d digest.Digest) string {
	return d.Algorithm().String() + "-" + d.Encoded() + ".sig"
}

// NewPayload returns the simple-signing payload cosign signs for the manifest d in repository repo
// (registry/repository): the JSON cosign's own library produces.
func NewPayload(repo string, d digest.Digest) ([]byte, error) {
	ref, err := name.NewDigest(repo+"@"+d.String(), name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("signature payload for %s@%s: %w", repo, d, err)
	}
	b, err := json.Marshal(payload.Cosign{Image: ref})
	if err != nil {
		return nil, fmt.Errorf("signature payload: %w", err)
	}
	return b, nil
}

// Payload is what a simple-signing payload claims.
type Payload struct {
	DockerReference string
	Digest          digest.Digest
}

// ParsePayload reads a simple-signing payload. It is strict about what verification relies on:
// the type must be cosign's and the digest well formed.
func ParsePayload(b []byte) (Payload, error) {
	if len(b) > maxPayloadBytes {
		return Payload{}, fmt.Errorf("%w: payload is %d bytes, above %d", ErrMalformed, len(b), maxPayloadBytes)
	}
	var p payload.SimpleContainerImage
	if err := json.Unmarshal(b, &p); err != nil {
		return Payload{}, fmt.Errorf("%w: payload: %v", ErrMalformed, err)
	}
	if p.Critical.Type != payload.CosignSignatureType {
		return Payload{}, fmt.Errorf("%w: payload type %q, not %q", ErrMalformed, p.Critical.Type, payload.CosignSignatureType)
	}
	d, err := digest.Parse(p.Critical.Image.DockerManifestDigest)
	if err != nil {
		return Payload{}, fmt.Errorf("%w: payload digest %q: %v", ErrMalformed, p.Critical.Image.DockerManifestDigest, err)
	}
	return Payload{DockerReference: p.Critical.Identity.DockerReference, Digest: d}, nil
}

// VerifyPayload checks a legacy signature: sigB64 (the annotation's value) must verify over payload
// with one of keys, and the payload must name want. It returns the key that verified.
// A signature by a trusted key over another digest is ErrOtherDigest: that is a signature moved
// from one artifact to another, and must not count.
func VerifyPayload(keys []PublicKey, payloadBytes []byte, sigB64 string, want digest.Digest) (PublicKey, error) {
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: signature annotation is not base64: %v", ErrMalformed, err)
	}
	for _, k := range keys {
		if k.verify(sig, payloadBytes) != nil {
			continue
		}
		p, err := ParsePayload(payloadBytes)
		if err != nil {
			return PublicKey{}, err
		}
		if p.Digest != want {
			return PublicKey{}, fmt.Errorf("%w: signed by %s over %s, not %s", ErrOtherDigest, k, p.Digest, want)
		}
		return k, nil
	}
	return PublicKey{}, ErrUntrusted
}

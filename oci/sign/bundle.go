package sign

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// BundleMediaType is the artifactType of the referrer cosign v3 stores a sigstore bundle in, and
// the media type of its one layer.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// maxBundleBytes bounds a bundle: one signed by a key is a few KB.
const maxBundleBytes = 1 << 20

// ParseBundle reads a sigstore bundle (the protobuf-specs JSON form) through sigstore-go, which
// also checks its structure: a DSSE envelope or message signature, and verification material.
func ParseBundle(data []byte) (*bundle.Bundle, error) {
	if len(data) > maxBundleBytes {
		return nil, fmt.Errorf("%w: bundle is %d bytes, above %d", ErrMalformed, len(data), maxBundleBytes)
	}
	b := &bundle.Bundle{Bundle: new(protobundle.Bundle)}
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("%w: bundle: %v", ErrMalformed, err)
	}
	return b, nil
}

// VerifyBundle checks that b is a signature over want by one of keys, with sigstore-go and no
// transparency log or timestamp (offline, key-based). It returns the key that verified. A bundle
// that verifies under a trusted key but signs another digest is ErrOtherDigest.
func VerifyBundle(b *bundle.Bundle, keys []PublicKey, want digest.Digest) (PublicKey, error) {
	wantBytes, err := hex.DecodeString(want.Encoded())
	if err != nil {
		return PublicKey{}, fmt.Errorf("digest %s: %w", want, err)
	}
	var other error
	for _, k := range keys {
		v, err := verify.NewVerifier(trusting(k), verify.WithNoObserverTimestamps())
		if err != nil {
			return PublicKey{}, fmt.Errorf("bundle verifier: %w", err)
		}
		res, err := v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest(want.Algorithm().String(), wantBytes), verify.WithKey()))
		if err == nil {
			// An in-toto statement of another predicate (provenance, an SBOM) by the same key is
			// an attestation about the artifact, not the signature cosign makes.
			if st := res.Statement; st != nil && st.GetPredicateType() != CosignSignPredicateType {
				return PublicKey{}, fmt.Errorf("%w: the bundle is a %q attestation, not a cosign signature", ErrMalformed, st.GetPredicateType())
			}
			return k, nil
		}
		// Tell "wrong key" from "right key, other artifact": verify over what the bundle claims.
		for _, d := range bundleSubjects(b) {
			db, err := hex.DecodeString(d.Encoded())
			if err != nil || d == want {
				continue
			}
			if _, err := v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest(d.Algorithm().String(), db), verify.WithKey())); err == nil {
				other = fmt.Errorf("%w: signed by %s over %s, not %s", ErrOtherDigest, k, d, want)
			}
		}
	}
	if other != nil {
		return PublicKey{}, other
	}
	return PublicKey{}, ErrUntrusted
}

// trusting is trusted material holding one key, valid at all times: key-based signatures carry no
// validity window of their own.
func trusting(k PublicKey) root.TrustedMaterial {
	return root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(k.verifier, time.Time{}, time.Time{}), nil
	})
}

// bundleSubjects lists the digests a bundle claims to sign: the in-toto statement's subjects of a
// DSSE envelope, or the digest of a message signature.
func bundleSubjects(b *bundle.Bundle) []digest.Digest {
	var out []digest.Digest
	if ms := b.GetMessageSignature(); ms != nil && ms.GetMessageDigest() != nil {
		// protobuf-specs names algorithms SHA2_256 and so on; OCI digests say sha256.
		alg := strings.ToLower(strings.Replace(ms.GetMessageDigest().GetAlgorithm().String(), "SHA2_", "SHA", 1))
		out = append(out, digest.NewDigestFromEncoded(digest.Algorithm(alg), hex.EncodeToString(ms.GetMessageDigest().GetDigest())))
	}
	if env, err := b.Envelope(); err == nil && env != nil {
		if st, err := env.Statement(); err == nil {
			for _, s := range st.GetSubject() {
				for alg, hexd := range s.GetDigest() {
					out = append(out, digest.NewDigestFromEncoded(digest.Algorithm(alg), hexd))
				}
			}
		}
	}
	return out
}

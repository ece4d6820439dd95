package oci

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// The annotations cosign v3 puts on a bundle referrer: what the bundle holds, and the predicate
// type of its statement. They select referrers without reading them; verification reads the
// bundle itself.
const (
	BundleContentAnnotation       = "dev.sigstore.bundle.content"
	BundlePredicateTypeAnnotation = "dev.sigstore.bundle.predicateType"
)

// AttachBundle stores a sigstore bundle (a signature or an attestation, made elsewhere: by a
// keyless signer, by cosign) as an OCI 1.1 referrer of what ref names, as cosign v3 stores it.
// The bundle is parsed first, so nothing malformed is stored.
func (c *Client) AttachBundle(ctx context.Context, ref string, bundle []byte) (ocispec.Descriptor, error) {
	sub, err := c.lookup(ctx, ref)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("attach bundle to %s: %w", ref, err)
	}
	b, err := sign.ParseBundle(bundle)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("attach bundle to %s: %w", ref, err)
	}
	desc, err := attachBundle(ctx, sub.repo, sub.desc, bundle, b.PredicateType())
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("attach bundle to %s: %w", ref, err)
	}
	return desc, nil
}

func attachBundle(ctx context.Context, repo *remote.Repository, subject ocispec.Descriptor, bundle []byte, predicateType string) (ocispec.Descriptor, error) {
	layer := content.NewDescriptorFromBytes(sign.BundleMediaType, bundle)
	if err := repo.Push(ctx, layer, bytes.NewReader(bundle)); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("upload bundle: %w", err)
	}
	annotations := map[string]string{BundleContentAnnotation: "message-signature"}
	if predicateType != "" {
		annotations = map[string]string{BundleContentAnnotation: "dsse-envelope", BundlePredicateTypeAnnotation: predicateType}
	}
	return oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, sign.BundleMediaType, oras.PackManifestOptions{
		Subject: &subject, Layers: []ocispec.Descriptor{layer}, ManifestAnnotations: annotations,
	})
}

// isAttestation reports whether a bundle referrer's annotations (its manifest's, or its
// descriptor's in the referrers index) say it holds an attestation (a statement of another
// predicate than cosign's signature): it is not listed as a signature.
func isAttestation(annotations map[string]string) bool {
	pt := annotations[BundlePredicateTypeAnnotation]
	return pt != "" && pt != sign.CosignSignPredicateType
}

// Attestation is one attestation found for an artifact.
type Attestation struct {
	// Manifest is the referrer holding the bundle.
	Manifest      digest.Digest `json:"manifest"`
	PredicateType string        `json:"predicateType"`
	Verified      bool          `json:"verified"`
	// SignedBy names the key or identity that verified it.
	SignedBy string `json:"signedBy,omitempty"`
	Problem  string `json:"problem,omitempty"`
	// Statement is the verified statement.
	Statement *sign.Statement `json:"-"`

	err error
}

// Err is why the attestation did not verify.
func (a Attestation) Err() error { return a.err }

// Attestations lists the attestations (bundle referrers of another predicate than a signature) of
// what ref names whose predicate type is one of predicateTypes (none: all), and verifies each
// against trust, over the digest ref resolves to.
func (c *Client) Attestations(ctx context.Context, ref string, trust sign.Trust, predicateTypes ...string) (ocispec.Descriptor, []Attestation, error) {
	sub, err := c.lookup(ctx, ref)
	if err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("attestations of %s: %w", ref, err)
	}
	refs, err := c.referrersOf(ctx, sub.repo, sub.desc, sign.BundleMediaType)
	if err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("attestations of %s: %w", ref, err)
	}
	var out []Attestation
	for _, r := range refs {
		if r.err != nil || len(r.manifest.Layers) != 1 {
			continue
		}
		pt := r.manifest.Annotations[BundlePredicateTypeAnnotation]
		if pt == sign.CosignSignPredicateType || (len(predicateTypes) > 0 && pt != "" && !slices.Contains(predicateTypes, pt)) {
			continue
		}
		a := Attestation{Manifest: r.desc.Digest, PredicateType: pt}
		data, err := c.readBlob(ctx, sub.repo, r.manifest.Layers[0], 1<<20)
		if err != nil {
			a.setProblem(err)
			out = append(out, a)
			continue
		}
		b, err := sign.ParseBundle(data)
		if err != nil {
			a.setProblem(err)
			out = append(out, a)
			continue
		}
		// the annotation only selects: the statement says what the bundle is
		a.PredicateType = b.PredicateType()
		if a.PredicateType == "" || a.PredicateType == sign.CosignSignPredicateType ||
			(len(predicateTypes) > 0 && !slices.Contains(predicateTypes, a.PredicateType)) {
			continue
		}
		st, err := sign.VerifyAttestation(b, trust, sub.desc.Digest)
		if err != nil {
			a.setProblem(err)
			out = append(out, a)
			continue
		}
		a.Verified, a.SignedBy, a.Statement = true, st.SignedBy.String(), &st
		out = append(out, a)
	}
	return sub.desc, out, nil
}

func (a *Attestation) setProblem(err error) {
	a.err, a.Problem = err, err.Error()
}

// SignKeyless signs what ref names keylessly (sign.SignKeyless: a Fulcio certificate for the
// identity token, a Rekor entry) and stores the bundle as a referrer, as cosign v3 does.
func (c *Client) SignKeyless(ctx context.Context, ref string, o sign.KeylessOptions) (Signature, error) {
	sub, err := c.lookup(ctx, ref)
	if err != nil {
		return Signature{}, fmt.Errorf("sign %s: %w", ref, err)
	}
	b, err := sign.SignKeyless(ctx, sub.desc.Digest, o)
	if err != nil {
		return Signature{}, fmt.Errorf("sign %s: %w", ref, err)
	}
	desc, err := attachBundle(ctx, sub.repo, sub.desc, b, sign.CosignSignPredicateType)
	if err != nil {
		return Signature{}, fmt.Errorf("sign %s: %w", ref, err)
	}
	return Signature{Format: FormatBundle, Manifest: desc.Digest, Blob: digest.FromBytes(b)}, nil
}

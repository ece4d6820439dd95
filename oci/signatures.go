package oci

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// Signature formats.
const (
	// FormatLegacy is cosign's original format: simple-signing payloads in a manifest tagged
	// sha256-<hex>.sig.
	FormatLegacy = "cosign-legacy"
	// FormatBundle is a sigstore bundle stored as an OCI 1.1 referrer, as cosign v3 writes.
	FormatBundle = "sigstore-bundle"
)

// SignatureStatus is how the service reports a digest: verified (a signature by a registered key),
// signed (signatures, none by a registered key) or unsigned.
type SignatureStatus string

// Signature statuses.
const (
	StatusVerified SignatureStatus = "verified"
	StatusSigned   SignatureStatus = "signed"
	StatusUnsigned SignatureStatus = "unsigned"
)

// Signature is one signature found for an artifact.
type Signature struct {
	Format string `json:"format"`
	// Manifest is the manifest holding the signature: the .sig manifest or the bundle referrer.
	Manifest digest.Digest `json:"manifest"`
	// Blob is the signed payload (legacy) or the bundle.
	Blob digest.Digest `json:"blob"`
	// Verified is set when a trusted key or identity verified the signature over the artifact's
	// digest.
	Verified bool `json:"verified"`
	// Key names the key that verified it.
	Key string `json:"key,omitempty"`
	// Identity and Issuer name the certificate identity of a keyless signature that verified.
	Identity string `json:"identity,omitempty"`
	Issuer   string `json:"issuer,omitempty"`
	// Problem says why it did not verify, when keys or identities were given.
	Problem string `json:"problem,omitempty"`

	err error
}

// SignedBy names who made a verified signature: its key, or its identity and issuer.
func (s Signature) SignedBy() string {
	if s.Identity != "" {
		return fmt.Sprintf("%s (issuer %s)", s.Identity, s.Issuer)
	}
	return s.Key
}

// Signatures lists the signatures of what ref names, in both formats, and checks each with keys
// (none: nothing is verified). subject is the descriptor that was looked up.
func (c *Client) Signatures(ctx context.Context, ref string, keys []sign.PublicKey) (ocispec.Descriptor, []Signature, error) {
	return c.SignaturesWith(ctx, ref, sign.Trust{Keys: keys})
}

// SignaturesWith is Signatures checking each signature against trust: keys and identities.
func (c *Client) SignaturesWith(ctx context.Context, ref string, trust sign.Trust) (ocispec.Descriptor, []Signature, error) {
	sub, err := c.lookup(ctx, ref)
	if err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("signatures of %s: %w", ref, err)
	}
	sigs, err := c.signatures(ctx, sub.repo, sub.desc, trust)
	if err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("signatures of %s: %w", ref, err)
	}
	return sub.desc, sigs, nil
}

// VerifySignatures returns a signature of ref by one of keys over ref's digest, or
// ErrNoSignature, ErrSignatureForOtherDigest or ErrUntrustedSignature.
func (c *Client) VerifySignatures(ctx context.Context, ref string, keys []sign.PublicKey) (Signature, error) {
	return c.VerifySignaturesWith(ctx, ref, sign.Trust{Keys: keys})
}

// VerifySignaturesWith returns a signature of ref trusted by trust (a key's, or a keyless one of a
// trusted identity) over ref's digest, or ErrNoSignature, ErrSignatureForOtherDigest or
// ErrUntrustedSignature naming what did not match.
func (c *Client) VerifySignaturesWith(ctx context.Context, ref string, trust sign.Trust) (Signature, error) {
	sub, err := c.lookup(ctx, ref)
	if err != nil {
		return Signature{}, fmt.Errorf("verify %s: %w", ref, err)
	}
	sig, err := c.verifySignatures(ctx, sub.repo, sub.ref, sub.desc, trust)
	if err != nil {
		return Signature{}, fmt.Errorf("verify %s: %w", ref, err)
	}
	return sig, nil
}

// SignatureStatus reports whether the manifest ref names is signed by one of keys (the service's
// registered keys). Errors are left for registry failures: a bad signature is just not verified.
func (c *Client) SignatureStatus(ctx context.Context, ref string, keys []sign.PublicKey) (SignatureStatus, error) {
	return c.SignatureStatusWith(ctx, ref, sign.Trust{Keys: keys})
}

// SignatureStatusWith is SignatureStatus with keys and identities: a keyless signature by a
// trusted identity makes the artifact verified.
func (c *Client) SignatureStatusWith(ctx context.Context, ref string, trust sign.Trust) (SignatureStatus, error) {
	_, sigs, err := c.SignaturesWith(ctx, ref, trust)
	if err != nil {
		return "", err
	}
	return Classify(sigs), nil
}

// Classify is the status signatures give their artifact: verified when a trusted key verified one
// of them, signed when there are signatures but none verified, unsigned when there are none.
func Classify(sigs []Signature) SignatureStatus {
	switch {
	case len(sigs) == 0:
		return StatusUnsigned
	case slices.ContainsFunc(sigs, func(s Signature) bool { return s.Verified }):
		return StatusVerified
	}
	return StatusSigned
}

func (c *Client) verifySignatures(ctx context.Context, repo *remote.Repository, ref Reference, subject ocispec.Descriptor, trust sign.Trust) (Signature, error) {
	if trust.IsZero() {
		return Signature{}, errors.New("no trusted keys or identities to verify with")
	}
	sigs, err := c.signatures(ctx, repo, subject, trust)
	if err != nil {
		return Signature{}, err
	}
	if len(sigs) == 0 {
		return Signature{}, fmt.Errorf("%w for %s (looked for the tag %s and for referrers of type %s)", ErrNoSignature, ref, sign.LegacyTag(subject.Digest), sign.BundleMediaType)
	}
	var problems []string
	for _, s := range sigs {
		if s.Verified {
			return s, nil
		}
	}
	for _, s := range sigs {
		if errors.Is(s.err, sign.ErrOtherDigest) {
			return Signature{}, fmt.Errorf("%s signature %s: %w", s.Format, s.Manifest, s.err)
		}
		problems = append(problems, fmt.Sprintf("%s %s: %s", s.Format, s.Manifest, s.Problem))
	}
	return Signature{}, fmt.Errorf("%w: %s has %d signature(s), none verifies with %s (%s)", ErrUntrustedSignature, ref, len(sigs), trust, strings.Join(problems, "; "))
}

// signatures collects both formats. A signature that cannot be read is reported with its problem
// rather than failing the listing: one bad signature must not hide a good one.
func (c *Client) signatures(ctx context.Context, repo *remote.Repository, subject ocispec.Descriptor, trust sign.Trust) ([]Signature, error) {
	legacy, err := c.legacySignatures(ctx, repo, subject, trust)
	if err != nil {
		return nil, err
	}
	bundles, err := c.bundleSignatures(ctx, repo, subject, trust)
	if err != nil {
		return nil, err
	}
	return append(legacy, bundles...), nil
}

func (c *Client) legacySignatures(ctx context.Context, repo *remote.Repository, subject ocispec.Descriptor, trust sign.Trust) ([]Signature, error) {
	tag := Reference{Registry: repo.Reference.Registry, Repository: repo.Reference.Repository, Tag: sign.LegacyTag(subject.Digest)}
	desc, raw, err := c.fetchManifest(ctx, repo, tag)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("legacy signatures: %w", err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("legacy signature manifest %s: %w", desc.Digest, err)
	}
	var out []Signature
	for _, l := range m.Layers {
		if l.MediaType != sign.SimpleSigningMediaType {
			continue
		}
		s := Signature{Format: FormatLegacy, Manifest: desc.Digest, Blob: l.Digest}
		payload, err := c.readBlob(ctx, repo, l, 1<<20)
		if err != nil {
			s.setProblem(err)
			out = append(out, s)
			continue
		}
		if !trust.IsZero() {
			s.setResult(sign.VerifyLegacy(trust, payload, l.Annotations, subject.Digest))
		}
		out = append(out, s)
	}
	return out, nil
}

func (c *Client) bundleSignatures(ctx context.Context, repo *remote.Repository, subject ocispec.Descriptor, trust sign.Trust) ([]Signature, error) {
	refs, err := c.referrersOf(ctx, repo, subject, sign.BundleMediaType)
	if err != nil {
		return nil, err
	}
	var out []Signature
	for _, r := range refs {
		if isAttestation(r.manifest.Annotations) {
			continue
		}
		s := Signature{Format: FormatBundle, Manifest: r.desc.Digest}
		if r.err != nil {
			s.setProblem(r.err)
			out = append(out, s)
			continue
		}
		if len(r.manifest.Layers) != 1 {
			s.setProblem(fmt.Errorf("%w: a bundle referrer holds one layer, not %d", sign.ErrMalformed, len(r.manifest.Layers)))
			out = append(out, s)
			continue
		}
		s.Blob = r.manifest.Layers[0].Digest
		data, err := c.readBlob(ctx, repo, r.manifest.Layers[0], 1<<20)
		if err != nil {
			s.setProblem(err)
			out = append(out, s)
			continue
		}
		b, err := sign.ParseBundle(data)
		if err != nil {
			s.setProblem(err)
			out = append(out, s)
			continue
		}
		if !trust.IsZero() {
			s.setResult(sign.VerifyBundleTrust(b, trust, subject.Digest))
		}
		out = append(out, s)
	}
	return out, nil
}

func (s *Signature) setProblem(err error) {
	s.err, s.Problem = err, err.Error()
}

func (s *Signature) setResult(by sign.SignedBy, err error) {
	if err != nil {
		s.setProblem(err)
		return
	}
	s.Verified = true
	if by.Keyless() {
		s.Identity, s.Issuer = by.Subject, by.Issuer
		return
	}
	s.Key = by.Key.String()
}

// SignOptions tune Sign.
type SignOptions struct {
	// Format is FormatLegacy (the default: what every cosign version verifies) or FormatBundle
	// (what cosign v3 writes).
	Format string
}

// Sign signs the manifest ref names with signer, offline. In the legacy format the signature is a
// simple-signing payload in the manifest tagged sha256-<hex>.sig, which `cosign verify --key`
// accepts; other signatures in that manifest are kept. In the bundle format it is a sigstore
// bundle in an OCI 1.1 referrer, as cosign v3 stores it.
func (c *Client) Sign(ctx context.Context, ref string, signer *sign.Signer, opts SignOptions) (Signature, error) {
	var (
		sig Signature
		err error
	)
	switch opts.Format {
	case "", FormatLegacy:
		sig, err = c.sign(ctx, ref, signer)
	case FormatBundle:
		sig, err = c.signBundle(ctx, ref, signer)
	default:
		err = fmt.Errorf("unknown signature format %q: expected %s or %s", opts.Format, FormatLegacy, FormatBundle)
	}
	if err != nil {
		return Signature{}, fmt.Errorf("sign %s: %w", ref, err)
	}
	return sig, nil
}

func (c *Client) signBundle(ctx context.Context, refStr string, signer *sign.Signer) (Signature, error) {
	sub, err := c.lookup(ctx, refStr)
	if err != nil {
		return Signature{}, err
	}
	b, err := signer.SignBundle(ctx, sub.desc.Digest)
	if err != nil {
		return Signature{}, err
	}
	desc, err := attachBundle(ctx, sub.repo, sub.desc, b, sign.CosignSignPredicateType)
	if err != nil {
		return Signature{}, err
	}
	return Signature{Format: FormatBundle, Manifest: desc.Digest, Blob: digest.FromBytes(b), Verified: true, Key: signer.Public().String()}, nil
}

func (c *Client) sign(ctx context.Context, refStr string, signer *sign.Signer) (Signature, error) {
	sub, err := c.lookup(ctx, refStr)
	if err != nil {
		return Signature{}, err
	}
	ref, repo, subject := sub.ref, sub.repo, sub.desc
	payload, err := sign.NewPayload(ref.Name(), subject.Digest)
	if err != nil {
		return Signature{}, err
	}
	sigBytes, err := signer.Sign(payload)
	if err != nil {
		return Signature{}, err
	}
	layer := content.NewDescriptorFromBytes(sign.SimpleSigningMediaType, payload)
	layer.Annotations = map[string]string{sign.SignatureAnnotation: base64.StdEncoding.EncodeToString(sigBytes)}

	tag := sign.LegacyTag(subject.Digest)
	var layers []ocispec.Descriptor
	_, raw, err := c.fetchManifest(ctx, repo, Reference{Registry: ref.Registry, Repository: ref.Repository, Tag: tag})
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return Signature{}, err
	default:
		var existing ocispec.Manifest
		if err := json.Unmarshal(raw, &existing); err != nil {
			return Signature{}, fmt.Errorf("existing signature manifest %s: %w", tag, err)
		}
		layers = existing.Layers
	}
	// Signing again with the same key replaces that key's signature of the same payload (ECDSA
	// signatures differ each time, so they would pile up); other keys' signatures stay.
	layers = slices.DeleteFunc(layers, func(l ocispec.Descriptor) bool {
		if l.Digest != layer.Digest {
			return false
		}
		_, err := sign.VerifyPayload([]sign.PublicKey{signer.Public()}, payload, l.Annotations[sign.SignatureAnnotation], subject.Digest)
		return err == nil
	})
	layers = append(layers, layer)
	if err := repo.Push(ctx, layer, bytes.NewReader(payload)); err != nil {
		return Signature{}, fmt.Errorf("upload signature payload: %w", err)
	}
	cfg, cfgRaw, err := signatureConfig(layers)
	if err != nil {
		return Signature{}, err
	}
	if err := repo.Push(ctx, cfg, bytes.NewReader(cfgRaw)); err != nil {
		return Signature{}, fmt.Errorf("upload signature config: %w", err)
	}
	m := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfg,
		Layers:    layers,
	}
	mRaw, err := json.Marshal(m)
	if err != nil {
		return Signature{}, err
	}
	mDesc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, mRaw)
	if err := repo.PushReference(ctx, mDesc, bytes.NewReader(mRaw), tag); err != nil {
		return Signature{}, fmt.Errorf("push signature manifest %s: %w", tag, err)
	}
	return Signature{Format: FormatLegacy, Manifest: mDesc.Digest, Blob: layer.Digest, Verified: true, Key: signer.Public().String()}, nil
}

// signatureConfig is the image config cosign writes for a signature manifest: an empty image whose
// rootfs lists the payload layers. Tools that read signatures as images (cosign, through
// go-containerregistry) parse it.
func signatureConfig(layers []ocispec.Descriptor) (ocispec.Descriptor, []byte, error) {
	cfg := ocispec.Image{RootFS: ocispec.RootFS{Type: "layers"}}
	for _, l := range layers {
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, l.Digest)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	return content.NewDescriptorFromBytes(ocispec.MediaTypeImageConfig, raw), raw, nil
}

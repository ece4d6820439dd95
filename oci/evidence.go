package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// SBOM media types, as the artifactType of an SBOM referrer and the media type of its one layer.
const (
	MediaTypeSPDX      = "application/spdx+json"
	MediaTypeCycloneDX = "application/vnd.cyclonedx+json"
)

// ErrNotSBOM is a document that is neither SPDX nor CycloneDX JSON.
var ErrNotSBOM = errors.New("not an SPDX or CycloneDX JSON document")

// DetectSBOM says which SBOM format data is, by its content: SPDX JSON has spdxVersion
// "SPDX-x.y", CycloneDX JSON has bomFormat "CycloneDX". It returns the format's media type.
func DetectSBOM(data []byte) (string, error) {
	var doc struct {
		SPDXVersion *string `json:"spdxVersion"`
		BOMFormat   *string `json:"bomFormat"`
		SpecVersion *string `json:"specVersion"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("%w: %s", ErrNotSBOM, err)
	}
	spdx := doc.SPDXVersion != nil && len(*doc.SPDXVersion) > 5 && (*doc.SPDXVersion)[:5] == "SPDX-"
	cdx := doc.BOMFormat != nil && *doc.BOMFormat == "CycloneDX" && doc.SpecVersion != nil && *doc.SpecVersion != ""
	switch {
	case spdx && cdx:
		return "", fmt.Errorf("%w: it says it is both SPDX and CycloneDX", ErrNotSBOM)
	case spdx:
		return MediaTypeSPDX, nil
	case cdx:
		return MediaTypeCycloneDX, nil
	}
	return "", fmt.Errorf("%w: no spdxVersion \"SPDX-x.y\" and no bomFormat \"CycloneDX\" with a specVersion", ErrNotSBOM)
}

// IsSBOM says whether an artifact type is an SBOM's.
func IsSBOM(artifactType string) bool {
	return artifactType == MediaTypeSPDX || artifactType == MediaTypeCycloneDX
}

// MaxSBOMBytes bounds an SBOM read from a registry or a file.
const MaxSBOMBytes = 32 << 20

// AttachSBOM stores an SBOM (SPDX or CycloneDX JSON, detected by content) as an OCI 1.1 referrer
// of what imageRef names, pinned by digest, with the format's media type as artifactType, as
// `oras attach` and `cosign attach sbom` tools store them.
func (c *Client) AttachSBOM(ctx context.Context, imageRef string, data []byte, opts AttachOptions) (PushResult, error) {
	res, err := c.attachSBOM(ctx, imageRef, data, opts)
	if err != nil {
		return PushResult{}, fmt.Errorf("attach an SBOM to %s: %w", imageRef, err)
	}
	return res, nil
}

func (c *Client) attachSBOM(ctx context.Context, imageRef string, data []byte, opts AttachOptions) (PushResult, error) {
	if len(data) > MaxSBOMBytes {
		return PushResult{}, fmt.Errorf("the SBOM is larger than %d bytes", MaxSBOMBytes)
	}
	mediaType, err := DetectSBOM(data)
	if err != nil {
		return PushResult{}, err
	}
	ref, err := ParseReference(imageRef)
	if err != nil {
		return PushResult{}, err
	}
	if ref.Digest == "" {
		return PushResult{}, fmt.Errorf("%w: attach needs the image by digest (name@sha256:...), not a tag that can move", ErrInvalidReference)
	}
	sub, err := c.lookup(ctx, imageRef)
	if err != nil {
		return PushResult{}, err
	}
	layer := content.NewDescriptorFromBytes(mediaType, data)
	if err := sub.repo.Push(ctx, layer, bytes.NewReader(data)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return PushResult{}, fmt.Errorf("upload the SBOM: %w", err)
	}
	created := opts.Created
	if created.IsZero() {
		created = time.Now()
	}
	desc, err := oras.PackManifest(ctx, sub.repo, oras.PackManifestVersion1_1, mediaType, oras.PackManifestOptions{
		Subject:             &sub.desc,
		Layers:              []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: created.UTC().Format(time.RFC3339)},
	})
	if err != nil {
		return PushResult{}, err
	}
	return PushResult{Reference: ref.WithDigest(desc.Digest), Descriptor: plain(desc)}, nil
}

// BundleReferrer is a sigstore bundle attached to an artifact, as it was read.
type BundleReferrer struct {
	Manifest digest.Digest
	Data     []byte
}

// SBOMReferrer is an SBOM attached to an artifact.
type SBOMReferrer struct {
	Manifest     digest.Digest
	ArtifactType string
	Layer        ocispec.Descriptor
}

// Evidence is what a registry holds about an artifact: its signatures (checked with keys), the
// sigstore bundles attached to it (keyless signatures and attestations, for a caller to verify
// against a trusted root) and its SBOMs.
type Evidence struct {
	Subject    ocispec.Descriptor
	Signatures []Signature
	Bundles    []BundleReferrer
	SBOMs      []SBOMReferrer
}

// Evidence reads what the registry holds about the artifact ref names. A referrer that cannot be
// read is left out: one bad referrer must not hide the others.
func (c *Client) Evidence(ctx context.Context, ref string, keys []sign.PublicKey) (Evidence, error) {
	sub, err := c.lookup(ctx, ref)
	if err != nil {
		return Evidence{}, fmt.Errorf("evidence of %s: %w", ref, err)
	}
	ev := Evidence{Subject: sub.desc}
	refs, err := c.referrersOf(ctx, sub.repo, sub.desc, "")
	if err != nil {
		return Evidence{}, fmt.Errorf("evidence of %s: %w", ref, err)
	}
	for _, r := range refs {
		if r.err != nil || len(r.manifest.Layers) != 1 {
			continue
		}
		switch {
		case r.artifactType == sign.BundleMediaType:
			data, err := c.readBlob(ctx, sub.repo, r.manifest.Layers[0], 1<<20)
			if err == nil {
				ev.Bundles = append(ev.Bundles, BundleReferrer{Manifest: r.desc.Digest, Data: data})
			}
		case IsSBOM(r.artifactType):
			ev.SBOMs = append(ev.SBOMs, SBOMReferrer{Manifest: r.desc.Digest, ArtifactType: r.artifactType, Layer: r.manifest.Layers[0]})
		}
	}
	// an attestation is no signature of the artifact (signatures leaves them out): it does not
	// make it "signed"
	ev.Signatures, err = c.signatures(ctx, sub.repo, sub.desc, sign.Trust{Keys: keys})
	if err != nil {
		return Evidence{}, fmt.Errorf("evidence of %s: %w", ref, err)
	}
	return ev, nil
}

// ReadSBOM returns the SBOM document of the referrer manifest of the artifact ref names, and its
// media type; a manifest that is not an SBOM referrer of that artifact is ErrNotFound.
func (c *Client) ReadSBOM(ctx context.Context, ref string, manifest digest.Digest) ([]byte, string, error) {
	sub, err := c.lookup(ctx, ref)
	if err != nil {
		return nil, "", fmt.Errorf("read SBOM %s of %s: %w", manifest, ref, err)
	}
	refs, err := c.referrersOf(ctx, sub.repo, sub.desc, "")
	if err != nil {
		return nil, "", fmt.Errorf("read SBOM %s of %s: %w", manifest, ref, err)
	}
	for _, r := range refs {
		if r.err != nil || r.desc.Digest != manifest || !IsSBOM(r.artifactType) || len(r.manifest.Layers) != 1 {
			continue
		}
		data, err := c.readBlob(ctx, sub.repo, r.manifest.Layers[0], MaxSBOMBytes)
		if err != nil {
			return nil, "", fmt.Errorf("read SBOM %s of %s: %w", manifest, ref, err)
		}
		return data, r.artifactType, nil
	}
	return nil, "", fmt.Errorf("read SBOM %s of %s: %w: no such SBOM referrer", manifest, ref, ErrNotFound)
}

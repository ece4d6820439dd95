package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// AttachOptions tune Attach.
type AttachOptions struct {
	// Created is the org.opencontainers.image.created annotation; zero means now.
	Created time.Time
}

// Attach stores a function definition as an OCI 1.1 referrer of the image imageRef names (spec
// v2 proposal: the metadata travels with the image). imageRef must be pinned by digest: a tag
// could move to an image the definition does not describe. On registries without the referrers
// API, oras-go maintains the referrers tag (sha256-<hex>) instead.
func (c *Client) Attach(ctx context.Context, imageRef string, def File, opts AttachOptions) (PushResult, error) {
	res, err := c.attach(ctx, imageRef, def, opts)
	if err != nil {
		return PushResult{}, fmt.Errorf("attach to %s: %w", imageRef, err)
	}
	return res, nil
}

func (c *Client) attach(ctx context.Context, imageRef string, def File, opts AttachOptions) (PushResult, error) {
	ref, err := ParseReference(imageRef)
	if err != nil {
		return PushResult{}, err
	}
	if ref.Digest == "" {
		return PushResult{}, fmt.Errorf("%w: attach needs the image by digest (name@sha256:...), not a tag that can move", ErrInvalidReference)
	}
	if err := checkFiles(PushOptions{Kind: KindDefinition, Files: []File{def}}); err != nil {
		return PushResult{}, err
	}
	sub, err := c.lookup(ctx, imageRef)
	if err != nil {
		return PushResult{}, err
	}
	repo, subject := sub.repo, sub.desc
	layer, err := c.pushBlob(ctx, repo, def, MediaTypeDefinition)
	if err != nil {
		return PushResult{}, err
	}
	created := opts.Created
	if created.IsZero() {
		created = time.Now()
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, MediaTypeDefinition, oras.PackManifestOptions{
		Subject: &subject,
		Layers:  []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{
			ocispec.AnnotationCreated: created.UTC().Format(time.RFC3339),
			ocispec.AnnotationTitle:   def.title(),
		},
	})
	if err != nil {
		return PushResult{}, err
	}
	return PushResult{Reference: ref.WithDigest(desc.Digest), Descriptor: plain(desc), Kind: KindDefinition}, nil
}

// Discovery is what is attached to an artifact.
type Discovery struct {
	Subject     ocispec.Descriptor
	Reference   Reference
	Definitions []ocispec.Descriptor
	Signatures  []Signature
	// SBOMs are SPDX and CycloneDX referrers.
	SBOMs []ocispec.Descriptor
	// Attestations are sigstore bundle referrers whose statement is not a signature (cosign attest:
	// SLSA provenance, vulnerability scans...), by the predicate type annotation cosign writes.
	Attestations []ocispec.Descriptor
	// Others are referrers of other artifact types.
	Others []ocispec.Descriptor
}

// Discover lists the definitions and signatures attached to what ref names, checking signatures
// with keys when given.
func (c *Client) Discover(ctx context.Context, ref string, keys []sign.PublicKey) (Discovery, error) {
	return c.DiscoverWith(ctx, ref, sign.Trust{Keys: keys})
}

// DiscoverWith is Discover verifying signatures against trust: keys and identities.
func (c *Client) DiscoverWith(ctx context.Context, ref string, trust sign.Trust) (Discovery, error) {
	d, err := c.discover(ctx, ref, trust)
	if err != nil {
		return Discovery{}, fmt.Errorf("discover %s: %w", ref, err)
	}
	return d, nil
}

func (c *Client) discover(ctx context.Context, refStr string, trust sign.Trust) (Discovery, error) {
	sub, err := c.lookup(ctx, refStr)
	if err != nil {
		return Discovery{}, err
	}
	repo, subject := sub.repo, sub.desc
	d := Discovery{Subject: subject, Reference: sub.ref}
	refs, err := c.referrersOf(ctx, repo, subject, "")
	if err != nil {
		return Discovery{}, err
	}
	for _, r := range refs {
		switch {
		case r.artifactType == MediaTypeDefinition:
			d.Definitions = append(d.Definitions, r.desc)
		case r.artifactType == sign.BundleMediaType:
			// signatures are listed below, without the attestations (by the same manifest
			// annotations); attestations apart
			if isAttestation(r.manifest.Annotations) {
				d.Attestations = append(d.Attestations, r.desc)
			}
		case IsSBOM(r.artifactType):
			d.SBOMs = append(d.SBOMs, r.desc)
		default:
			d.Others = append(d.Others, r.desc)
		}
	}
	d.Signatures, err = c.signatures(ctx, repo, subject, trust)
	if err != nil {
		return Discovery{}, err
	}
	return d, nil
}

// referrer is a referrer whose manifest was fetched and checked.
type referrer struct {
	desc         ocispec.Descriptor // as listed, with the artifact type corrected
	artifactType string
	manifest     ocispec.Manifest
	err          error // why the manifest could not be used
}

// referrersOf lists the referrers of subject, keeping those of artifactType ("" keeps all). The
// artifact type is read from each (digest-checked) manifest, not believed from the listing:
// registries differ in what they report there (go-containerregistry's reports the config media
// type), and a listing is only a hint. A referrer whose manifest does not name subject as its
// subject is dropped.
func (c *Client) referrersOf(ctx context.Context, repo *remote.Repository, subject ocispec.Descriptor, artifactType string) ([]referrer, error) {
	var listed []ocispec.Descriptor
	err := repo.Referrers(ctx, subject, "", func(rs []ocispec.Descriptor) error {
		listed = append(listed, rs...)
		return nil
	})
	if err != nil && !errors.Is(registryErr(err), ErrNotFound) {
		return nil, fmt.Errorf("referrers: %w", err)
	}
	var out []referrer
	for _, l := range listed {
		// Skip what the listing says is something else, unless the listing cannot be trusted to say.
		if artifactType != "" && l.ArtifactType != artifactType && l.ArtifactType != "" && l.ArtifactType != ocispec.MediaTypeEmptyJSON {
			continue
		}
		r := referrer{desc: l, artifactType: l.ArtifactType}
		_, raw, err := c.fetchManifestByDesc(ctx, repo, l)
		if err == nil {
			err = json.Unmarshal(raw, &r.manifest)
		}
		if err != nil {
			r.err = err
			if artifactType == "" || l.ArtifactType == artifactType {
				out = append(out, r)
			}
			continue
		}
		if r.manifest.Subject == nil || r.manifest.Subject.Digest != subject.Digest {
			continue
		}
		r.artifactType = r.manifest.ArtifactType
		if r.artifactType == "" {
			r.artifactType = r.manifest.Config.MediaType
		}
		r.desc.ArtifactType = r.artifactType
		if len(r.desc.Annotations) == 0 {
			r.desc.Annotations = r.manifest.Annotations
		}
		if artifactType == "" || r.artifactType == artifactType {
			out = append(out, r)
		}
	}
	return out, nil
}

// Read returns the content of a one-file artifact (a catalog, definition or starlark script) of at
// most limit bytes, verified and through the cache.
func (c *Client) Read(ctx context.Context, refStr string, limit int64) (Artifact, []byte, error) {
	ref, err := ParseReference(refStr)
	if err != nil {
		return Artifact{}, nil, err
	}
	repo := c.repository(ref)
	a, err := c.resolve(ctx, repo, ref, nil)
	if err != nil {
		return Artifact{}, nil, fmt.Errorf("read %s: %w", refStr, err)
	}
	if len(a.Layers) != 1 || a.Kind == KindExec {
		return Artifact{}, nil, fmt.Errorf("read %s: a %s artifact with %d files is not a single document", refStr, a.Kind, len(a.Layers))
	}
	b, err := c.readBlob(ctx, repo, a.Layers[0], limit)
	if err != nil {
		return Artifact{}, nil, fmt.Errorf("read %s: %w", refStr, err)
	}
	if c.opts.Cache != nil {
		if err := c.opts.Cache.record(ctx, a.Root); err != nil {
			return Artifact{}, nil, err
		}
	}
	return a, b, nil
}

// BlobExists reports whether the registry holds a blob of the artifact, without downloading it.
func (c *Client) BlobExists(ctx context.Context, a Artifact, layer ocispec.Descriptor) (bool, error) {
	if c.opts.Cache != nil && c.opts.Cache.has(ctx, layer.Digest) {
		return true, nil
	}
	ok, err := c.repository(a.Reference).Exists(ctx, layer)
	if err != nil {
		return false, registryErr(err)
	}
	return ok, nil
}

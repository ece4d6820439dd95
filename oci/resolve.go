package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
)

const (
	dockerManifestV2 = "application/vnd.docker.distribution.manifest.v2+json"
	// orasUnknownArtifact is the artifactType `oras push` writes when given none; the layers then
	// say what the artifact is.
	orasUnknownArtifact = "application/vnd.unknown.artifact.v1"
)

// Artifact is a resolved krm-catalog artifact. Every descriptor in it comes from a manifest whose
// digest was checked, so its layer digests can be compared with the digests a catalog records.
type Artifact struct {
	// Reference is the reference asked for, pinned to Root's digest.
	Reference Reference
	// Root is what the reference names: a manifest, or an index for exec artifacts.
	Root ocispec.Descriptor
	// Manifest is the manifest whose layers hold the files: Root itself, or the entry of the index
	// for the chosen platform.
	Manifest ocispec.Descriptor
	Kind     Kind
	Layers   []ocispec.Descriptor
	// Annotations are the manifest's.
	Annotations map[string]string
	// Platforms lists the platforms of an index.
	Platforms []ocispec.Platform
}

// Resolve fetches and checks the manifests ref names, without downloading layers. For an index,
// platform chooses the manifest (nil: the running platform).
func (c *Client) Resolve(ctx context.Context, ref string, platform *ocispec.Platform) (Artifact, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return Artifact{}, err
	}
	a, err := c.resolve(ctx, c.repository(r), r, platform)
	if err != nil {
		return Artifact{}, fmt.Errorf("resolve %s: %w", ref, err)
	}
	return a, nil
}

func (c *Client) resolve(ctx context.Context, repo *remote.Repository, ref Reference, platform *ocispec.Platform) (Artifact, error) {
	root, raw, err := c.fetchManifest(ctx, repo, ref)
	if err != nil {
		return Artifact{}, err
	}
	a := Artifact{Reference: ref.WithDigest(root.Digest), Root: root, Manifest: root}
	if root.MediaType == ocispec.MediaTypeImageIndex {
		var idx ocispec.Index
		if err := json.Unmarshal(raw, &idx); err != nil {
			return Artifact{}, fmt.Errorf("index %s: %w", root.Digest, err)
		}
		if idx.ArtifactType != "" {
			if _, ok := KindOf(idx.ArtifactType); !ok {
				return Artifact{}, fmt.Errorf("%w: %s is an index of artifactType %q, not a krm-catalog artifact", ErrUnsupportedMediaType, ref, idx.ArtifactType)
			}
		}
		for _, m := range idx.Manifests {
			if m.Platform != nil {
				a.Platforms = append(a.Platforms, *m.Platform)
			}
		}
		want := CurrentPlatform()
		if platform != nil {
			want = *platform
		}
		child, err := matchPlatform(idx.Manifests, want)
		if err != nil {
			return Artifact{}, err
		}
		a.Manifest, raw, err = c.fetchManifestByDesc(ctx, repo, child)
		if err != nil {
			return Artifact{}, err
		}
		a.Manifest.Platform = child.Platform
	}
	if a.Manifest.MediaType != ocispec.MediaTypeImageManifest && a.Manifest.MediaType != dockerManifestV2 {
		return Artifact{}, fmt.Errorf("%w: %s is a %q, not an image manifest holding a krm-catalog artifact", ErrUnsupportedMediaType, ref, a.Manifest.MediaType)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return Artifact{}, fmt.Errorf("manifest %s: %w", a.Manifest.Digest, err)
	}
	a.Kind, err = ArtifactKind(m)
	if err != nil {
		return Artifact{}, fmt.Errorf("%s: %w", ref, err)
	}
	a.Layers, a.Annotations = m.Layers, m.Annotations
	return a, nil
}

// ArtifactKind tells which krm-catalog artifact a manifest holds: by its artifactType, or for
// manifests written before OCI 1.1 (or by `oras push` without --artifact-type) by its config media
// type, or failing both by its layers. Every
// layer must have the kind's media type. Anything else is ErrUnsupportedMediaType, naming what
// was found.
func ArtifactKind(m ocispec.Manifest) (Kind, error) {
	kind, ok := KindOf(m.ArtifactType)
	if !ok && (m.ArtifactType == "" || m.ArtifactType == orasUnknownArtifact) {
		kind, ok = KindOf(m.Config.MediaType)
		if !ok && len(m.Layers) > 0 {
			kind, ok = KindOf(m.Layers[0].MediaType)
		}
	}
	if !ok {
		return "", fmt.Errorf("%w: found artifactType %q, config %q, layers [%s]; expected a krm-catalog catalog, definition, starlark or exec artifact",
			ErrUnsupportedMediaType, m.ArtifactType, m.Config.MediaType, layerTypes(m.Layers))
	}
	if len(m.Layers) == 0 {
		return "", fmt.Errorf("the %s artifact has no layers", kind)
	}
	for i, l := range m.Layers {
		if l.MediaType != kind.MediaType() {
			return "", fmt.Errorf("%w: layer %d of the %s artifact has media type %q, not %q", ErrUnsupportedMediaType, i, kind, l.MediaType, kind.MediaType())
		}
	}
	return kind, nil
}

func layerTypes(layers []ocispec.Descriptor) string {
	var ts []string
	for _, l := range layers {
		ts = append(ts, l.MediaType)
	}
	return strings.Join(ts, ", ")
}

// Head returns the descriptor of the manifest ref names, from the registry, without fetching it:
// enough to know that it exists.
func (c *Client) Head(ctx context.Context, ref string) (ocispec.Descriptor, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if r.target() == "" {
		return ocispec.Descriptor{}, fmt.Errorf("%w %q: it names no tag or digest", ErrInvalidReference, ref)
	}
	desc, err := c.repository(r).Resolve(ctx, r.target())
	if err != nil {
		return ocispec.Descriptor{}, registryErr(err)
	}
	return desc, nil
}

package resolver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// ResolveImage finds the function whose container runtime is the image: the same repository and
// the same tag, or the same digest (a catalog's sha256 field counts as its digest). Only trusted
// catalogs (and the built-in one) are searched, in order, and the first match wins; untrusted ones
// are passed over without being fetched, since an image, unlike a kind, is not a request to use a
// catalog. What runs is the version the catalog lists, so a match by tag runs what the catalog
// pinned, whatever the tag points at now. With a runtime kind, only versions that offer it match.
// No match is ErrNotFound.
func (r *Resolver) ResolveImage(ctx context.Context, image, kind string) (*Resolution, error) {
	want, err := catalog.ParseImage(image)
	if err != nil {
		return nil, fmt.Errorf("resolve image: %w", err)
	}
	if want.Tag == "" && want.Digest == "" {
		want.Tag = "latest"
	}
	searched := 0
	for i, ref := range r.refs {
		builtin := i < r.builtin
		if !builtin && !r.isTrusted(ref) {
			continue
		}
		searched++
		cat, err := r.load(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("resolve image %s: %w", image, err)
		}
		for _, f := range cat.Functions {
			for _, v := range f.Versions {
				if c := v.Runtime.Container; c != nil && imageMatches(*c, want) && (kind == "" || slices.Contains(v.Runtime.Kinds(), kind)) {
					return &Resolution{
						APIVersion: f.APIVersion(v), Kind: f.Kind,
						Catalog: ref.Raw, CatalogName: cat.Name, Builtin: builtin,
						Function: f, Version: v,
					}, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("resolve image %s: %w; searched %d trusted catalog(s)", image, ErrNotFound, searched)
}

// imageMatches reports whether a catalog's container runtime is the image wanted.
func imageMatches(c catalog.ContainerRuntime, want catalog.ImageRef) bool {
	have, err := catalog.ParseImage(c.Image)
	if err != nil || have.Name != want.Name {
		return false
	}
	if c.SHA256 != "" {
		have.Digest = "sha256:" + strings.TrimPrefix(c.SHA256, "sha256:")
	}
	if want.Digest != "" {
		return want.Digest == have.Digest
	}
	return have.Tag == want.Tag
}

package resolver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// CatalogImage is a container image a trusted catalog lists, with the function version it runs.
type CatalogImage struct {
	// Ref is the image, its digest taken from the catalog's sha256 field when it has one.
	Ref catalog.ImageRef
	*Resolution
}

// Images lists the container images of the trusted catalogs (the built-in one and those named by
// --trusted-catalog), in search order. Untrusted catalogs are passed over without being fetched,
// since an image, unlike a kind, is not a request to use a catalog; an image a catalog writes
// unparsably is left out (validation reports it).
func (r *Resolver) Images(ctx context.Context) ([]CatalogImage, error) {
	var out []CatalogImage
	for i, ref := range r.refs {
		builtin := i < r.builtin
		if !builtin && !r.isTrusted(ref) {
			continue
		}
		cat, err := r.load(ctx, i)
		if err != nil {
			return nil, err
		}
		for _, f := range cat.Functions {
			for _, v := range f.Versions {
				c := v.Runtime.Container
				if c == nil {
					continue
				}
				img, err := catalog.ParseImage(c.Image)
				if err != nil {
					continue
				}
				if c.SHA256 != "" {
					img.Digest = "sha256:" + strings.TrimPrefix(c.SHA256, "sha256:")
				}
				out = append(out, CatalogImage{Ref: img, Resolution: &Resolution{
					APIVersion: f.APIVersion(v), Kind: f.Kind,
					Catalog: ref.Raw, CatalogName: cat.Name, Builtin: builtin,
					Function: f, Version: v,
				}})
			}
		}
	}
	return out, nil
}

// ResolveImage finds the function whose container runtime is the image: the same repository and
// the same tag, or the same digest, the first in search order. What runs is the version the
// catalog lists, so a match by tag runs what the catalog pinned, whatever the tag points at now.
// With a runtime kind, only versions that offer it match. No match is ErrNotFound. An image without
// tag or digest is its :latest; with Options.ShortImagePrefix, names are completed as Porch does.
func (r *Resolver) ResolveImage(ctx context.Context, image, kind string) (*Resolution, error) {
	want, err := catalog.ParseImage(image)
	if err != nil {
		return nil, fmt.Errorf("resolve image: %w", err)
	}
	want = want.Completed(r.shortImagePrefix)
	images, err := r.Images(ctx)
	if err != nil {
		return nil, fmt.Errorf("resolve image %s: %w", image, err)
	}
	var others []string // the same repository at other tags, for the error
	for _, img := range images {
		have := img.Ref
		if r.shortImagePrefix != "" {
			have = have.Completed(r.shortImagePrefix)
		}
		if imageMatches(have, want) && (kind == "" || slices.Contains(img.Version.Runtime.Kinds(), kind)) {
			return img.Resolution, nil
		}
		if have.Name == want.Name && have.Tag != "" {
			others = append(others, img.Catalog+" lists it at "+have.Tag)
		}
	}
	name := image
	if full := want.String(); full != image {
		name += " (" + full + ")"
	}
	hint := ""
	if len(others) > 0 {
		hint = " (" + strings.Join(others, "; ") + ")"
	}
	return nil, fmt.Errorf("resolve image %s: %w; %s%s", name, ErrNotFound, r.searchedCatalogs(), hint)
}

// searchedCatalogs says which catalogs an image was looked for in, and which were passed over as
// untrusted, for an error a user acts on: the fix is often a --trusted-catalog.
func (r *Resolver) searchedCatalogs() string {
	var searched, untrusted []string
	for i, ref := range r.refs {
		switch {
		case i < r.builtin:
			searched = append(searched, ref.Raw+" (built-in)")
		case r.isTrusted(ref):
			searched = append(searched, ref.Raw)
		default:
			untrusted = append(untrusted, ref.Raw)
		}
	}
	s := "no trusted catalog was given (--catalog with --trusted-catalog) and there is no built-in catalog"
	if len(searched) > 0 {
		s = fmt.Sprintf("searched %d catalog(s): %s", len(searched), strings.Join(searched, ", "))
	}
	if len(untrusted) > 0 {
		s += "; not searched, untrusted (--trusted-catalog trusts them): " + strings.Join(untrusted, ", ")
	}
	return s
}

// imageMatches reports whether a catalog's image is the image wanted.
func imageMatches(have, want catalog.ImageRef) bool {
	if have.Name != want.Name {
		return false
	}
	if want.Digest != "" {
		return want.Digest == have.Digest
	}
	return have.Tag == want.Tag
}

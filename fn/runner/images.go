package runner

// An image a trusted catalog lists: with --runtime exec or starlark, the catalog's runtime of that
// function runs instead of the container.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/krm-catalog/krm-catalog/resolver"
)

// SplitImage splits an image reference into repository, tag and digest (hex, without sha256:).
func SplitImage(image string) (repo, tag, digest string) {
	repo = image
	if i := strings.Index(repo, "@"); i >= 0 {
		digest = strings.TrimPrefix(repo[i+1:], "sha256:")
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		tag = repo[i+1:]
		repo = repo[:i]
	}
	return repo, tag, digest
}

// sameImage reports whether a catalog's container runtime is the image a step names: the same
// repository, and the same tag or the same digest.
func sameImage(c *catalogImage, image string) bool {
	repo, tag, digest := SplitImage(image)
	if repo != c.repo {
		return false
	}
	return tag != "" && tag == c.tag || digest != "" && digest == c.digest
}

type catalogImage struct{ repo, tag, digest string }

// ImageResolution is, when the user prefers the exec or starlark runtime (--runtime), the first
// function version of the trusted catalogs (the built-in one and those named by
// --trusted-catalog; untrusted ones are not fetched) that lists the image as its container and
// offers that runtime. It is nil otherwise: the image runs as a container.
func (r *Runner) ImageResolution(ctx context.Context, image string) (*resolver.Resolution, error) {
	kind := r.o.Runtime
	if r.o.Resolver == nil || kind != "exec" && kind != "starlark" {
		return nil, nil
	}
	for _, ref := range r.o.Resolver.Refs() {
		cat, err := r.o.Resolver.Load(ctx, ref.Raw)
		if errors.Is(err, resolver.ErrUntrustedCatalog) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("look for image %s in the catalogs: %w", image, err)
		}
		for _, f := range cat.Functions {
			for _, v := range f.Versions {
				c := v.Runtime.Container
				if c == nil {
					continue
				}
				ci := &catalogImage{}
				ci.repo, ci.tag, ci.digest = SplitImage(c.Image)
				if c.SHA256 != "" {
					ci.digest = c.SHA256
				}
				offers := false
				for _, k := range v.Runtime.Kinds() {
					offers = offers || k == kind
				}
				if offers && sameImage(ci, image) {
					return &resolver.Resolution{
						APIVersion: f.APIVersion(v), Kind: f.Kind,
						Catalog: ref.Raw, CatalogName: cat.Name,
						Function: f, Version: v,
					}, nil
				}
			}
		}
	}
	return nil, nil
}

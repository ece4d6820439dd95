package runner

// An image a trusted catalog lists: with --runtime exec or starlark, the catalog's runtime of that
// function runs instead of the container.

import (
	"context"
	"errors"

	"github.com/krm-catalog/krm-catalog/resolver"
)

// ImageResolution is, when the user prefers the exec or starlark runtime (--runtime), the first
// function version of the trusted catalogs (the built-in one and those named by
// --trusted-catalog; untrusted ones are not fetched) that lists the image as its container and
// offers that runtime. It is nil otherwise: the image runs as a container.
func (r *Runner) ImageResolution(ctx context.Context, image string) (*resolver.Resolution, error) {
	kind := r.o.Runtime
	if r.o.Resolver == nil || kind != "exec" && kind != "starlark" {
		return nil, nil
	}
	res, err := r.o.Resolver.ResolveImage(ctx, image, kind)
	if errors.Is(err, resolver.ErrNotFound) {
		return nil, nil
	}
	return res, err
}

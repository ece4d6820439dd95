package resolver

import (
	"context"
	"fmt"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// LoadBytes is Load that also returns the catalog's bytes as fetched, for tools that rewrite a
// catalog (mirror) rather than resolve through it. Trust is checked first, and the bytes are
// validated; they are fetched afresh, not shared with Load's memo.
func (r *Resolver) LoadBytes(ctx context.Context, raw string) ([]byte, *catalog.Catalog, error) {
	for i, ref := range r.refs {
		if ref.Raw != raw {
			continue
		}
		if i >= r.builtin && !r.isTrusted(ref) {
			return nil, nil, fmt.Errorf("%w %q: trust it with --trusted-catalog %s", ErrUntrustedCatalog, raw, shellQuote(raw))
		}
		data, err := r.fetchRef(ctx, ref)
		if err != nil {
			return nil, nil, fmt.Errorf("%w %s: %w", ErrFetch, ref.Raw, err)
		}
		cat, err := r.decode(ref.Raw, data)
		if err != nil {
			return nil, nil, err
		}
		return data, cat, nil
	}
	return nil, nil, fmt.Errorf("catalog %q is not one of the catalogs given", raw)
}

package apiclient

import (
	"context"
	"net/http"
	"net/url"
)

// FunctionEntry is one current entry of a function: one version as one source (a catalog's latest
// version, or the latest definition) lists it.
type FunctionEntry struct {
	Version   string `json:"version"`
	Publisher string `json:"publisher"`
	// Spec is the version object as the source lists it (name, runtime, schema, ...).
	Spec   map[string]any `json:"spec"`
	Source struct {
		Catalog        string `json:"catalog,omitempty"`
		CatalogVersion string `json:"catalogVersion,omitempty"`
		Definition     bool   `json:"definition,omitempty"`
		// CuratedBy is the curator when the source lists another publisher's function by
		// reference; empty for the publisher's own sources.
		CuratedBy string `json:"curatedBy,omitempty"`
	} `json:"source"`
}

// FunctionDetail is a function with every current entry.
type FunctionDetail struct {
	Group     string          `json:"group"`
	Kind      string          `json:"kind"`
	Publisher string          `json:"publisher"`
	Entries   []FunctionEntry `json:"entries"`
}

// Function returns a function and its current entries from every source.
func (c *Client) Function(ctx context.Context, group, kind string) (FunctionDetail, error) {
	var out FunctionDetail
	err := c.do(ctx, http.MethodGet, "/api/v1/functions/"+url.PathEscape(group)+"/"+url.PathEscape(kind), "", nil, &out)
	return out, err
}

// CatalogInfo is a published catalog: its name and publisher.
type CatalogInfo struct {
	Name      string `json:"name"`
	Publisher string `json:"publisher"`
}

// Catalog returns a published catalog.
func (c *Client) Catalog(ctx context.Context, name string) (CatalogInfo, error) {
	var out CatalogInfo
	err := c.do(ctx, http.MethodGet, "/api/v1/catalogs/"+url.PathEscape(name), "", nil, &out)
	return out, err
}

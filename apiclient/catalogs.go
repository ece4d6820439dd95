package apiclient

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// rawAnswer, as the out of do, receives the answer's bytes and headers as sent.
type rawAnswer struct {
	data   []byte
	header http.Header
}

// LatestCatalog returns the bytes of the latest version of catalog name, as published, and that
// version; nil and "" when the service has no such catalog.
func (c *Client) LatestCatalog(ctx context.Context, name string) (data []byte, version string, err error) {
	var raw rawAnswer
	err = c.do(ctx, http.MethodGet, "/catalogs/"+url.PathEscape(name)+"/catalog.yaml", "", nil, &raw)
	var apiErr *Error
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return raw.data, raw.header.Get("X-Catalog-Version"), nil
}

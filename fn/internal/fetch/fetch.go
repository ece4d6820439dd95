// Package fetch downloads what functions need (executables, scripts) over https, or over plain
// http from this machine.
package fetch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/krm-catalog/krm-catalog/internal/loopback"
	"github.com/krm-catalog/krm-catalog/internal/tlshint"
)

// HTTPS gets url and returns the body of a 200 response. A URL or a redirect that is neither https
// nor plain http to this machine (localhost, a loopback address) is refused before it is requested:
// what is fetched will run, and a request over plain http across a network already tells an
// observer what is being fetched. On this machine nothing is in transit, and the sha256 the caller
// checks carries integrity, as it does over https. client nil uses a client with timeout; a client
// given is not changed.
func HTTPS(ctx context.Context, client *http.Client, url string, timeout time.Duration) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if !loopback.Secure(req.URL) {
		return nil, fmt.Errorf("GET %s: not https (plain http only to localhost or a loopback address)", url)
	}
	c := &http.Client{Timeout: timeout}
	if client != nil {
		copied := *client
		c = &copied
	}
	c.CheckRedirect = loopback.CheckRedirect(c.CheckRedirect)
	resp, err := c.Do(req)
	if err != nil {
		return nil, tlshint.Wrap(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET: %s", resp.Status)
	}
	return resp.Body, nil
}

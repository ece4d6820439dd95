// Package fetch downloads what functions need (executables, scripts) over https.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxRedirects is net/http's own bound, kept when the redirect check is ours.
const maxRedirects = 10

// HTTPS gets url and returns the body of a 200 response. A URL or a redirect that is not https is
// refused before it is requested: what is fetched will run, and a request over plain http already
// tells an observer what is being fetched. client nil uses a client with timeout; a client given
// is not changed.
func HTTPS(ctx context.Context, client *http.Client, url string, timeout time.Duration) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if req.URL.Scheme != "https" {
		return nil, fmt.Errorf("GET %s: not https", url)
	}
	c := &http.Client{Timeout: timeout}
	if client != nil {
		copied := *client
		c = &copied
	}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" {
			return fmt.Errorf("redirected to %s, which is not https", req.URL)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET: %s", resp.Status)
	}
	return resp.Body, nil
}

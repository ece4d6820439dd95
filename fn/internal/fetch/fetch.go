// Package fetch downloads what functions need (executables, scripts) over https.
package fetch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// HTTPS gets url and returns the body of a 200 response. A redirect away from https is refused: what
// is fetched will run. client nil uses a client with timeout.
func HTTPS(ctx context.Context, client *http.Client, url string, timeout time.Duration) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET: %s", resp.Status)
	}
	if resp.Request != nil && resp.Request.URL.Scheme != "https" {
		resp.Body.Close()
		return nil, fmt.Errorf("redirected to %s, which is not https", resp.Request.URL)
	}
	return resp.Body, nil
}

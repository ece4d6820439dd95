// Package apiclient is a small client of the krm-catalog HTTP API, used by `krm-catalog publish`.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one krm-catalog service.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
	// wait sleeps between attempts unless ctx ends first; replaceable in tests.
	wait func(ctx context.Context, d time.Duration) error
}

// Timeouts of the default HTTP client: a service that does not answer fails the command instead of
// hanging it. A publish may push to a registry, so a whole request may take a minute.
const (
	DefaultTimeout      = 2 * time.Minute
	dialTimeout         = 10 * time.Second
	responseHeaderLimit = 90 * time.Second
)

// maxAttempts bounds the tries of a request the service answered 429 or 503 (or could not be
// reached for): publishes are idempotent, so sending one again is safe.
const maxAttempts = 4

// NewHTTPClient returns the default client: bounded dialing, TLS handshake, response headers and
// whole requests.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = dialTimeout
	t.ResponseHeaderTimeout = responseHeaderLimit
	return &http.Client{Transport: t, Timeout: DefaultTimeout}
}

// New returns a client of the service at baseURL, authenticating with token when it is not empty.
// A nil httpClient means NewHTTPClient().
func New(baseURL, token string, httpClient *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q must be http(s)://host[:port]", baseURL)
	}
	if httpClient == nil {
		httpClient = NewHTTPClient()
	}
	return &Client{base: u, token: token, http: httpClient, wait: waitContext}, nil
}

// Error is an error response of the API.
type Error struct {
	Status  int
	Message string   `json:"message"`
	Details []Detail `json:"details"`
}

// Detail is one finding behind an error.
type Detail struct {
	Severity string `json:"severity"`
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Message  string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status) }

// Published is the answer to a publish.
type Published struct {
	Created  bool           `json:"created"`
	Warnings []Detail       `json:"warnings"`
	Catalog  map[string]any `json:"catalog"`
	Def      map[string]any `json:"definition"`
}

// PublishCatalog publishes catalog bytes as version of catalog name.
func (c *Client) PublishCatalog(ctx context.Context, name, version string, body []byte) (Published, error) {
	return c.put(ctx, "/api/v1/catalogs/"+url.PathEscape(name)+"/versions/"+url.PathEscape(version), body)
}

// PublishDefinition publishes a KRMFunctionDefinition of group/kind.
func (c *Client) PublishDefinition(ctx context.Context, group, kind string, body []byte) (Published, error) {
	return c.put(ctx, "/api/v1/definitions/"+url.PathEscape(group)+"/"+url.PathEscape(kind), body)
}

// put sends a PUT, again after a 429 or 503 (waiting what Retry-After says, at most 30 s) or a
// failed connection, up to maxAttempts times, for as long as ctx lasts.
func (c *Client) put(ctx context.Context, path string, body []byte) (Published, error) {
	backoff := time.Second
	for attempt := 1; ; attempt++ {
		out, retryIn, err := c.putOnce(ctx, path, body)
		if retryIn == 0 || attempt == maxAttempts {
			return out, err
		}
		if retryIn < 0 {
			retryIn, backoff = backoff, backoff*2
		}
		if werr := c.wait(ctx, retryIn); werr != nil {
			return out, err
		}
	}
}

func waitContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// putOnce sends one PUT. retryIn is how long to wait before trying again when that may help (-1:
// back off), else 0.
func (c *Client) putOnce(ctx context.Context, path string, body []byte) (out Published, retryIn time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.base.String()+path, bytes.NewReader(body))
	if err != nil {
		return out, 0, err
	}
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return out, 0, err
		}
		return out, -1, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return out, 0, fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		retryIn = -1
		if secs, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && secs >= 0 {
			retryIn = min(time.Duration(max(secs, 1))*time.Second, 30*time.Second)
		}
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error Error `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error.Message == "" {
			e.Error.Message = strings.TrimSpace(string(data))
			if e.Error.Message == "" {
				e.Error.Message = resp.Status
			}
		}
		e.Error.Status = resp.StatusCode
		return out, retryIn, &e.Error
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return out, 0, fmt.Errorf("read response: %w", err)
	}
	return out, 0, nil
}

// Package apiclient is a small client of the krm-catalog HTTP API, used by `krm-catalog publish`.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/krm-catalog/krm-catalog/internal/loopback"
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

// maxAnswerBytes bounds an answer read: a catalog.yaml is at most 16 MiB (catalog.MaxInputBytes).
const maxAnswerBytes = 16 << 20

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

// Option changes how New builds a client.
type Option func(*options)

type options struct{ cleartextToken bool }

// AllowCleartextToken lets a client send its token over plain HTTP to a host other than this
// machine, where anyone on the path can read it. Without it New refuses such a client.
func AllowCleartextToken() Option { return func(o *options) { o.cleartextToken = true } }

// ErrCleartextToken is New's refusal to send a token unencrypted to another machine.
var ErrCleartextToken = errors.New("refusing to send the token in clear text")

// New returns a client of the service at baseURL, authenticating with token when it is not empty.
// A nil httpClient means NewHTTPClient(). A token goes over plain http:// only to this machine
// (localhost, a loopback address), unless AllowCleartextToken says otherwise.
func New(baseURL, token string, httpClient *http.Client, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q must be http(s)://host[:port]", baseURL)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if token != "" && u.Scheme == "http" && !loopback.Is(u.Host) && !o.cleartextToken {
		return nil, fmt.Errorf("%w to %s: use https://, or allow plain HTTP explicitly", ErrCleartextToken, u.Redacted())
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

func (c *Client) put(ctx context.Context, path string, body []byte) (Published, error) {
	var out Published
	err := c.do(ctx, http.MethodPut, path, "application/yaml", body, &out)
	return out, err
}

// do sends a request and decodes the JSON answer into out (nil: the answer is not read); an error
// status is an *Error. It sends again after a 429 or 503 (waiting what Retry-After says, at most
// 30 s) or a failed connection, up to maxAttempts times, for as long as ctx lasts: every request of
// the API is idempotent or, like a key challenge, harmless to repeat.
func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	backoff := time.Second
	for attempt := 1; ; attempt++ {
		retryIn, err := c.once(ctx, method, path, contentType, body, out)
		if retryIn == 0 || attempt == maxAttempts {
			return c.reach(err)
		}
		if retryIn < 0 {
			retryIn, backoff = backoff, backoff*2
		}
		if werr := c.wait(ctx, retryIn); werr != nil {
			return c.reach(err)
		}
	}
}

// ErrUnreachable: no connection to the service could be made (nothing listens there, or the host
// is not found).
var ErrUnreachable = errors.New("cannot reach the krm-catalog service")

// reach says what a failed connection means for someone who has not started the service yet.
func (c *Client) reach(err error) error {
	var op *net.OpError
	if err == nil || !errors.As(err, &op) || op.Op != "dial" {
		return err
	}
	return fmt.Errorf("%w at %s (%v): is `krm-catalog serve` running there? Start it, or name another with --server", ErrUnreachable, c.base.Redacted(), op.Err)
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

// once sends one request. retryIn is how long to wait before trying again when that may help (-1:
// back off), else 0.
func (c *Client) once(ctx context.Context, method, path, contentType string, body []byte, out any) (retryIn time.Duration, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return 0, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	raw, isRaw := out.(*rawAnswer)
	if isRaw {
		req.Header.Set("Accept", "application/yaml")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, err
		}
		return -1, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return 0, fmt.Errorf("read response: %w", err)
	}
	if len(data) > maxAnswerBytes {
		return 0, fmt.Errorf("read response: above %d MiB", maxAnswerBytes>>20)
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		retryIn = -1
		if secs, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && secs >= 0 {
			retryIn = min(time.Duration(max(secs, 1))*time.Second, 30*time.Second)
		}
	}
	if resp.StatusCode >= 300 {
		return retryIn, responseError(resp, data)
	}
	if out == nil {
		return 0, nil
	}
	if isRaw {
		raw.data, raw.header = data, resp.Header
		return 0, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return 0, fmt.Errorf("read response: %w", err)
	}
	return 0, nil
}

// Package apiclient is a small client of the krm-catalog HTTP API, used by `krm-catalog publish`.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client talks to one krm-catalog service.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// New returns a client of the service at baseURL, authenticating with token when it is not empty.
func New(baseURL, token string, httpClient *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q must be http(s)://host[:port]", baseURL)
	}
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{base: u, token: token, http: httpClient}, nil
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

// do sends a request and decodes the JSON answer into out; an error status is an *Error.
func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("read response: %w", err)
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
		return &e.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	return nil
}

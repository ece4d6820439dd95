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
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.base.String()+path, bytes.NewReader(body))
	if err != nil {
		return out, err
	}
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return out, fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode >= 300 {
		return out, responseError(resp, data)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return out, fmt.Errorf("read response: %w", err)
	}
	return out, nil
}

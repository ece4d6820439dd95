package oci

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/krm-catalog/krm-catalog/internal/loopback"
)

// Options configure a Client.
type Options struct {
	// Credentials supplies registry credentials, usually the docker config
	// (credentials.NewStoreFromDocker); nil means anonymous access.
	Credentials credentials.Store
	// PlainHTTP talks plain HTTP to every registry. Loopback registries (localhost, 127.0.0.1,
	// ::1) always get plain HTTP.
	PlainHTTP bool
	// HTTPClient sends the requests; nil means oras-go's retrying client.
	HTTPClient *http.Client
	// Cache holds pulled content; nil means nothing is cached and every pull uses the network.
	Cache *Cache
	// Progress is told about blob transfers; nil means quiet.
	Progress Progress
	// UserAgent is sent with every request.
	UserAgent string
}

// Client talks to OCI registries. It is safe for concurrent use.
type Client struct {
	opts      Options
	authCache auth.Cache
}

// NewClient returns a client; it does not touch the network.
func NewClient(opts Options) *Client {
	return &Client{opts: opts, authCache: auth.NewCache()}
}

// NewBoundedHTTPClient returns oras-go's retrying client over a transport whose dialing, TLS
// handshake and response headers are bounded, and whose whole requests take at most total: for
// services, which must not wait forever on a registry that stopped answering (oras-go's default
// client has no timeout). Its retries wait on the request's context.
func NewBoundedHTTPClient(total time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 5 * time.Second
	t.ResponseHeaderTimeout = 15 * time.Second
	return &http.Client{Transport: retry.NewTransport(t), Timeout: total}
}

// Cache returns the client's cache, nil when it has none.
func (c *Client) Cache() *Cache { return c.opts.Cache }

func (c *Client) repository(ref Reference) *remote.Repository {
	httpClient := c.opts.HTTPClient
	if httpClient == nil {
		httpClient = retry.DefaultClient
	}
	ac := &auth.Client{Client: httpClient, Cache: c.authCache}
	if c.opts.UserAgent != "" {
		ac.SetUserAgent(c.opts.UserAgent)
	}
	if c.opts.Credentials != nil {
		ac.Credential = credentials.Credential(c.opts.Credentials)
	}
	repo := &remote.Repository{
		Client:    ac,
		PlainHTTP: c.opts.PlainHTTP || loopback.Is(ref.Registry),
		// Artifacts are small in number; a page bound stops a hostile registry from paging forever.
		ReferrerListMaxPages: 100,
		TagListMaxPages:      100,
		// Without the referrers API, oras-go replaces the referrers index (tag sha256-<hex>) on each
		// attach and deletes the old one; many registries refuse deletes (distribution does by
		// default), which would fail the attach. A stale index is harmless garbage.
		SkipReferrersGC: true,
	}
	repo.Reference.Registry, repo.Reference.Repository = ref.Registry, ref.Repository
	return repo
}

// Login checks cred against the registry host and, when it is accepted, stores it.
func (c *Client) Login(ctx context.Context, host string, cred auth.Credential) error {
	if c.opts.Credentials == nil {
		return fmt.Errorf("login %s: no credentials store", host)
	}
	reg, err := remote.NewRegistry(host)
	if err != nil {
		return fmt.Errorf("login %s: %w", host, err)
	}
	reg.PlainHTTP = c.opts.PlainHTTP || loopback.Is(host)
	httpClient := c.opts.HTTPClient
	if httpClient == nil {
		httpClient = retry.DefaultClient
	}
	reg.Client = &auth.Client{Client: httpClient}
	if err := credentials.Login(ctx, c.opts.Credentials, reg, cred); err != nil {
		return fmt.Errorf("login %s: %w", host, err)
	}
	return nil
}

// Logout forgets the stored credentials of a registry host.
func (c *Client) Logout(ctx context.Context, host string) error {
	if c.opts.Credentials == nil {
		return fmt.Errorf("logout %s: no credentials store", host)
	}
	if err := credentials.Logout(ctx, c.opts.Credentials, host); err != nil {
		return fmt.Errorf("logout %s: %w", host, err)
	}
	return nil
}

// maxTags bounds the tags Tags returns: a registry could otherwise page out tags without end.
const maxTags = 10000

// Tags lists the tags of a repository (ref's tag and digest are ignored), at most maxTags of them.
func (c *Client) Tags(ctx context.Context, ref Reference) ([]string, error) {
	var out []string
	err := c.repository(ref).Tags(ctx, "", func(tags []string) error {
		out = append(out, tags...)
		if len(out) > maxTags {
			return fmt.Errorf("more than %d tags", maxTags)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list tags of %s/%s: %w", ref.Registry, ref.Repository, err)
	}
	return out, nil
}

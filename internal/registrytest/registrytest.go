// Package registrytest starts real OCI registries in-process on 127.0.0.1 for tests: the
// distribution registry, which has no referrers API (so oras-go falls back to the referrers tag
// schema), and go-containerregistry's, which has it. It also provides a proxy that tampers with
// what a registry serves.
package registrytest

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory" // the storage driver the config names
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/sirupsen/logrus"
)

// Registry is a running registry.
type Registry struct {
	Name string // "distribution" or "ggcr"
	// Host is host:port on 127.0.0.1.
	Host string
	// Referrers says whether the registry serves the OCI 1.1 referrers API.
	Referrers bool
	server    *httptest.Server
}

// Close stops the registry (tests use it to prove a pull needs no network).
func (r *Registry) Close() { r.server.Close() }

var quietLogrus sync.Once

// Distribution starts distribution/distribution v3 (registry/handlers.NewApp) with in-memory
// storage. It has no referrers API.
func Distribution(t testing.TB) *Registry {
	t.Helper()
	// distribution logs every request through logrus's standard logger; there is no other switch.
	quietLogrus.Do(func() { logrus.SetOutput(io.Discard) })
	cfg := &configuration.Configuration{}
	cfg.Storage = configuration.Storage{
		"inmemory":    configuration.Parameters{},
		"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
	}
	cfg.HTTP.Secret = "registrytest"
	cfg.Log.AccessLog.Disabled = true
	ctx, cancel := context.WithCancel(context.Background())
	app := handlers.NewApp(ctx, cfg)
	r := start(t, "distribution", app, false)
	t.Cleanup(cancel)
	return r
}

// WithReferrers starts go-containerregistry's registry with the referrers API.
func WithReferrers(t testing.TB) *Registry {
	t.Helper()
	h := registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0)))
	return start(t, "ggcr", h, true)
}

// Both starts one registry of each kind, for table-driven tests that must pass on both.
func Both(t testing.TB) []*Registry {
	return []*Registry{Distribution(t), WithReferrers(t)}
}

func start(t testing.TB, name string, h http.Handler, referrers bool) *Registry {
	srv := httptest.NewServer(h) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return &Registry{Name: name, Host: strings.TrimPrefix(srv.URL, "http://"), Referrers: referrers, server: srv}
}

// Tamper starts a reverse proxy to reg that flips one byte in the body of every successful GET
// whose path contains pathPart ("/blobs/" or "/manifests/"), leaving headers (and so the
// announced digest and length) alone: a registry, or a network, serving wrong bytes.
func Tamper(t testing.TB, reg *Registry, pathPart string) string {
	t.Helper()
	target := &url.URL{Scheme: "http", Host: reg.Host}
	p := httputil.NewSingleHostReverseProxy(target)
	p.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodGet || resp.StatusCode != http.StatusOK || !strings.Contains(resp.Request.URL.Path, pathPart) {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if len(body) > 0 {
			body[len(body)/2] ^= 0x01
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

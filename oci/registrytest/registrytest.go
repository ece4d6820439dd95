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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd" // the access controller DistributionWithAuth names
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem" // DistributionOnDisk's storage
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"   // the other registries' storage
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
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
	return distribution(t, nil, configuration.Parameters{})
}

// DistributionOnDisk is Distribution storing blobs in a temporary directory. Benchmarks use it:
// the in-memory driver copies a blob on every append, so a 50 MB upload costs seconds and would
// measure the registry rather than the client.
func DistributionOnDisk(t testing.TB) *Registry {
	t.Helper()
	return distribution(t, nil, configuration.Parameters{"rootdirectory": t.TempDir()})
}

// DistributionWithAuth is Distribution requiring HTTP basic authentication as user/password.
func DistributionWithAuth(t testing.TB, user, password string) *Registry {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(path, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return distribution(t, configuration.Auth{"htpasswd": configuration.Parameters{"realm": "registrytest", "path": path}}, configuration.Parameters{})
}

// distribution starts the registry; disk parameters name a filesystem root, empty ones mean memory.
func distribution(t testing.TB, auth configuration.Auth, disk configuration.Parameters) *Registry {
	// distribution logs every request through logrus's standard logger; there is no other switch.
	quietLogrus.Do(func() { logrus.SetOutput(io.Discard) })
	cfg := &configuration.Configuration{}
	cfg.Storage = configuration.Storage{
		"inmemory":    configuration.Parameters{},
		"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
	}
	if len(disk) > 0 {
		delete(cfg.Storage, "inmemory")
		cfg.Storage["filesystem"] = disk
	}
	cfg.Auth = auth
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

// PushImage pushes a minimal container image (an image config and one layer) to ref on a
// registry started here, and returns its manifest digest. salt changes the layer, so pushing
// again with another salt moves the tag.
func PushImage(t testing.TB, ref, salt string) digest.Digest {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(ref)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	cfgRaw := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	cfg := content.NewDescriptorFromBytes(ocispec.MediaTypeImageConfig, cfgRaw)
	layerRaw := []byte("layer " + ref + salt)
	layer := content.NewDescriptorFromBytes(ocispec.MediaTypeImageLayer, layerRaw)
	if err := repo.Push(ctx, cfg, bytes.NewReader(cfgRaw)); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(ctx, layer, bytes.NewReader(layerRaw)); err != nil {
		t.Fatal(err)
	}
	m, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{ConfigDescriptor: &cfg, Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Tag(ctx, m, repo.Reference.Reference); err != nil {
		t.Fatal(err)
	}
	return m.Digest
}

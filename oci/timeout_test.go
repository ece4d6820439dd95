package oci_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

// stallingRegistry answers every request with the headers and the first bytes of a manifest, then
// sends nothing more.
func stallingRegistry(t *testing.T) string {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Content-Length", "1000")
		w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("0", 64))
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"schemaVersion":`))
		w.(http.Flusher).Flush()
		<-done
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) })
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestRegistryTimeout(t *testing.T) {
	t.Parallel()
	const bound = 100 * time.Millisecond
	silent, stalling := registrytest.Silent(t), stallingRegistry(t)
	file := writeFile(t, "catalog.yaml", "x")
	tests := []struct {
		name string
		host string
		op   func(ctx context.Context, c *oci.Client, ref string) error
	}{
		{"pull from a registry that never answers", silent, func(ctx context.Context, c *oci.Client, ref string) error {
			_, err := c.Pull(ctx, ref, oci.PullOptions{Dir: t.TempDir()})
			return err
		}},
		{"push to a registry that never answers", silent, func(ctx context.Context, c *oci.Client, ref string) error {
			_, err := c.Push(ctx, ref, oci.PushOptions{Kind: oci.KindCatalog, Files: []oci.File{{Path: file}}})
			return err
		}},
		{"pull from a registry that stops sending", stalling, func(ctx context.Context, c *oci.Client, ref string) error {
			_, err := c.Pull(ctx, ref, oci.PullOptions{Dir: t.TempDir()})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The context's deadline only keeps a broken bound from hanging the test; the bound
			// must fire long before it.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := oci.NewClient(oci.Options{HTTPClient: oci.NewIdleBoundedHTTPClient(bound)})
			err := tc.op(ctx, c, tc.host+"/catalogs/x:v1")
			if !errors.Is(err, oci.ErrRegistryTimeout) {
				t.Fatalf("error %v, want one that is oci.ErrRegistryTimeout", err)
			}
			msg := err.Error()
			for _, want := range []string{"registry " + tc.host, "timed out"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if ctx.Err() != nil {
				t.Errorf("the test's own deadline ended the operation: %v", err)
			}
		})
	}
}

// A registry that answers in time is unaffected by the bound.
func TestRegistryTimeoutAnswered(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	c := oci.NewClient(oci.Options{HTTPClient: oci.NewIdleBoundedHTTPClient(time.Minute)})
	_, err := c.Pull(context.Background(), strings.TrimPrefix(srv.URL, "http://")+"/catalogs/x:v1", oci.PullOptions{Dir: t.TempDir()})
	if !errors.Is(err, oci.ErrNotFound) || errors.Is(err, oci.ErrRegistryTimeout) {
		t.Errorf("error %v, want not found", err)
	}
}

// BenchmarkIdleBoundedDownload: the bound's cost on a large download (a timer restarted around
// each read) against oras-go's default client, alternating within each iteration so that both see
// the same load. Reports each side's time per 64 MiB and the ratio (target: at most 1.05).
func BenchmarkIdleBoundedDownload(b *testing.B) {
	blob := make([]byte, 64<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(blob) }))
	b.Cleanup(srv.Close)
	get := func(c *http.Client) time.Duration {
		start := time.Now()
		resp, err := c.Get(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != int64(len(blob)) {
			b.Fatalf("read %d bytes: %v", n, err)
		}
		return time.Since(start)
	}
	bounded, plain := oci.NewIdleBoundedHTTPClient(oci.DefaultIdleTimeout), retry.NewClient()
	var ours, theirs time.Duration
	for b.Loop() {
		ours += get(bounded)
		theirs += get(plain)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ours.Microseconds())/1000/n, "ms/bounded")
	b.ReportMetric(float64(theirs.Microseconds())/1000/n, "ms/default")
	b.ReportMetric(float64(ours)/float64(theirs), "ratio")
	b.ReportMetric(0, "ns/op") // the metrics above are the result
}

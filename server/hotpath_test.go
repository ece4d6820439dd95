package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// discardWriter is a ResponseWriter as net/http hands one to a handler: a fresh header map per
// request, the body thrown away.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkCatalogYAMLHandler serves a cached catalog.yaml through the whole router and its
// middleware, as BenchmarkCatalogYAMLThroughput does over HTTP, without the network.
func BenchmarkCatalogYAMLHandler(b *testing.B) {
	ts := newTestServer(b, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil)) }) // serve's level: info
	ts.publishExample(b)
	ts.cache.setLive(true) // as when the listener is connected: the cache keeps the latest
	req := httptest.NewRequest(http.MethodGet, "/catalogs/example-functions/catalog.yaml", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		ts.ServeHTTP(w, req)
		if w.status != 0 && w.status != http.StatusOK {
			b.Fatal(w.status)
		}
	}
}

package resolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/krm-catalog/krm-catalog/internal/loopback"
)

// A catalog over plain http from this machine resolves, as a registry on it is spoken to; a
// redirect away from https to another machine is refused before it is followed.
func TestURLCatalogs(t *testing.T) {
	t.Parallel()
	body := catalogYAML("local", fnEntry{"fn.example.com", "A", "a", []string{"v1"}})
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
	t.Cleanup(plain.Close)
	redirect := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-loopback-http":
			http.Redirect(w, r, plain.URL+"/catalog.yaml", http.StatusFound)
		case "/to-other-http":
			http.Redirect(w, r, "http://192.0.2.1/catalog.yaml", http.StatusFound)
		}
	}))
	t.Cleanup(redirect.Close)
	tests := []struct {
		name, ref, err string
	}{
		{"plain http on 127.0.0.1", plain.URL + "/catalog.yaml", ""},
		{"https redirected to plain http on this machine", redirect.URL + "/to-loopback-http", ""},
		{"https redirected to plain http elsewhere", redirect.URL + "/to-other-http", "neither https nor this machine"},
	}
	// the client dials this machine only: were a redirect followed elsewhere, the dial is
	// refused and counted rather than sent
	var elsewhere atomic.Int32
	transport := redirect.Client().Transport.(*http.Transport).Clone()
	dial := (&net.Dialer{}).DialContext
	transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !loopback.Is(addr) {
			elsewhere.Add(1)
			return nil, fmt.Errorf("the test dials only this machine, not %s", addr)
		}
		return dial(ctx, network, addr)
	}
	client := &http.Client{Transport: transport}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := New(Options{Catalogs: []string{tc.ref}, Trusted: []string{tc.ref}, HTTPClient: client, CacheDir: "-"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.ResolveGVK(context.Background(), "fn.example.com/v1", "A")
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrFetch)):
				t.Fatalf("%v, want an ErrFetch saying %q", err, tc.err)
			}
		})
	}
	t.Cleanup(func() {
		if n := elsewhere.Load(); n != 0 {
			t.Errorf("%d dials to another machine: a redirect was followed", n)
		}
	})
}

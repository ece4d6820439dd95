package apiclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPutRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		statuses   []int // answers in order; the last repeats
		retryAfter string
		wantCalls  int
		wantWaits  []time.Duration
		wantStatus int // of the returned *Error; 0: success
	}{
		{"a 503 with Retry-After is tried again after it", []int{503, 201}, "3", 2, []time.Duration{3 * time.Second}, 0},
		{"a 429 without Retry-After backs off", []int{429, 429, 201}, "", 3, []time.Duration{time.Second, 2 * time.Second}, 0},
		{"attempts are bounded", []int{503}, "1", maxAttempts, []time.Duration{time.Second, time.Second, time.Second}, 503},
		{"a 422 is final", []int{422}, "", 1, nil, 422},
		{"Retry-After is capped", []int{503, 200}, "3600", 2, []time.Duration{30 * time.Second}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(calls.Add(1))
				status := tc.statuses[min(n, len(tc.statuses))-1]
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(status)
				if status < 300 {
					_, _ = w.Write([]byte(`{"created":true}`))
				} else {
					_, _ = w.Write([]byte(`{"error":{"message":"no"}}`))
				}
			}))
			defer srv.Close()
			c, err := New(srv.URL, "t", nil)
			if err != nil {
				t.Fatal(err)
			}
			var waits []time.Duration
			c.wait = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
			res, err := c.PublishCatalog(context.Background(), "c", "1.0.0", []byte("x"))
			var apiErr *Error
			switch {
			case tc.wantStatus == 0 && (err != nil || !res.Created):
				t.Errorf("got %+v, %v; want success", res, err)
			case tc.wantStatus != 0 && (!errors.As(err, &apiErr) || apiErr.Status != tc.wantStatus):
				t.Errorf("got error %v, want status %d", err, tc.wantStatus)
			}
			if int(calls.Load()) != tc.wantCalls {
				t.Errorf("%d calls, want %d", calls.Load(), tc.wantCalls)
			}
			if diff := cmp.Diff(tc.wantWaits, waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWaitHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := waitContext(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait on a canceled context = %v", err)
	}
}

func TestDefaultClientHasTimeouts(t *testing.T) {
	t.Parallel()
	c := NewHTTPClient()
	tr := c.Transport.(*http.Transport)
	if c.Timeout == 0 || tr.ResponseHeaderTimeout == 0 || tr.TLSHandshakeTimeout == 0 {
		t.Errorf("the default client can wait forever: timeout %s, response headers %s, TLS %s", c.Timeout, tr.ResponseHeaderTimeout, tr.TLSHandshakeTimeout)
	}
}

// TestStalledServer checks that a service that accepts and never answers fails a publish within
// the client's timeout instead of hanging it.
func TestStalledServer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	hc := NewHTTPClient()
	hc.Timeout = 200 * time.Millisecond
	c, err := New(srv.URL, "", hc)
	if err != nil {
		t.Fatal(err)
	}
	c.wait = func(context.Context, time.Duration) error { return errors.New("no retries here") }
	done := make(chan error, 1)
	go func() { _, err := c.PublishCatalog(context.Background(), "c", "1", nil); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a stalled server answered")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the publish hung on a stalled server")
	}
}

// TestCleartextToken: a token goes over plain HTTP only to this machine, unless allowed.
func TestCleartextToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url, token string
		allow      bool
		refused    bool
	}{
		{"http://127.0.0.1:8080", "t", false, false},
		{"http://[::1]:8080", "t", false, false},
		{"http://localhost:8080", "t", false, false},
		{"https://catalog.example.com", "t", false, false},
		{"http://catalog.example.com", "", false, false},
		{"http://catalog.example.com", "t", false, true},
		{"http://192.0.2.1:8080", "t", false, true},
		{"http://127.0.0.1.example.com", "t", false, true},
		{"http://catalog.example.com", "t", true, false},
	}
	for _, tc := range tests {
		var opts []Option
		if tc.allow {
			opts = append(opts, AllowCleartextToken())
		}
		_, err := New(tc.url, tc.token, nil, opts...)
		if got := errors.Is(err, ErrCleartextToken); got != tc.refused {
			t.Errorf("New(%s, token %q, allow %v): %v, want refused %v", tc.url, tc.token, tc.allow, err, tc.refused)
		}
	}
}

// A service on which nothing listens is said to be unreachable, with what to do, after the same
// retries as any failed connection.
func TestUnreachableService(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := New("http://"+addr, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	waits := 0
	c.wait = func(context.Context, time.Duration) error { waits++; return nil }
	_, err = c.Search(context.Background(), SearchQuery{Text: "x"})
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "krm-catalog serve") || !strings.Contains(err.Error(), addr) {
		t.Errorf("%v, want ErrUnreachable naming %s and saying to start the service", err, addr)
	}
	if waits != maxAttempts-1 {
		t.Errorf("%d retries, want %d", waits, maxAttempts-1)
	}
}

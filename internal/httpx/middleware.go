package httpx

// The middleware the API and the website share. chi's middleware package offers the same, but
// importing it links net/http/pprof (whose initialiser registers on http.DefaultServeMux) and runs
// its request-ID initialiser (hostname, random bytes) at every start of every command, 0.8 MiB of
// memory for `krm-catalog version` (docs/benchmarks.md, "Start-up").

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-chi/chi/v5"
)

// RequestIDHeader is the header a request ID is taken from when a proxy in front already set one.
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// RequestIDs makes request IDs, for the log and the error pages, where a request did not come with
// one (X-Request-Id): this process's prefix and a counter.
type RequestIDs struct {
	once   sync.Once
	prefix string
	n      atomic.Uint64
}

// IsRequestIDKey reports whether key is what RequestID asks a context's Value for: the context a
// middleware gives each request answers it with the ID (the X-Request-Id the request came with,
// else New), without a context.WithValue and a copy of the request more.
func IsRequestIDKey(key any) bool {
	_, ok := key.(requestIDKey)
	return ok
}

// New is a new ID: the process's prefix, "-" and the counter, at least six digits. Built without
// fmt: it may run on every request.
func (ids *RequestIDs) New() string {
	prefix := ids.processPrefix()
	var buf [128]byte
	b := append(buf[:0], prefix...)
	b = append(b, '-')
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], ids.n.Add(1), 10)
	for range 6 - len(d) {
		b = append(b, '0')
	}
	return string(append(b, d...))
}

// processPrefix is host/random: IDs from two replicas, or two runs of one, do not collide.
func (ids *RequestIDs) processPrefix() string {
	ids.once.Do(func() {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		ids.prefix = host + "/" + base64.RawURLEncoding.EncodeToString(b[:])
	})
	return ids.prefix
}

// RequestID is the ID RequestIDs.Middleware gave the request, "" outside it.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// HeadAsGet routes a HEAD request that no HEAD route matches to the GET route, so every page and
// endpoint answers HEAD (net/http drops the body). It must run inside a chi router.
func HeadAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		rctx := chi.RouteContext(r.Context())
		path := rctx.RoutePath
		if path == "" {
			path = r.URL.RawPath
			if path == "" {
				path = r.URL.Path
			}
		}
		if !rctx.Routes.Match(chi.NewRouteContext(), http.MethodHead, path) {
			rctx.RouteMethod = http.MethodGet
			rctx.RoutePath = path
		}
		next.ServeHTTP(w, r)
	})
}

// StatusRecorder is a ResponseWriter that remembers the status and counts the body bytes, for
// metrics and the request log.
type StatusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

// WriteHeader records the status.
func (s *StatusRecorder) WriteHeader(status int) {
	if s.status == 0 && status >= 200 { // 1xx are interim

		s.status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

// Write counts the bytes, and records 200 if the handler wrote no header first.
func (s *StatusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer (flush, deadlines).
func (s *StatusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Status is the status sent: 200 if the handler wrote nothing at all, as net/http sends then.
func (s *StatusRecorder) Status() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Bytes is how many body bytes the handler wrote.
func (s *StatusRecorder) Bytes() int { return s.bytes }

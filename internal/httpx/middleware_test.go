package httpx

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/google/go-cmp/cmp"
)

func TestRequestIDs(t *testing.T) {
	t.Parallel()
	var ids RequestIDs
	seen := []string{ids.New(), ids.New(), ids.New()}
	if got := RequestID(context.WithValue(context.Background(), requestIDKey{}, seen[0])); got != seen[0] {
		t.Errorf("RequestID = %q, want %q", got, seen[0])
	}
	generated := regexp.MustCompile(`^[^/]+/[A-Za-z0-9_-]{11}-(\d{6})$`)
	var counters []string
	for _, id := range seen {
		m := generated.FindStringSubmatch(id)
		if m == nil {
			t.Fatalf("ID %q: want host/random-counter", id)
		}
		counters = append(counters, m[1])
	}
	if diff := cmp.Diff([]string{"000001", "000002", "000003"}, counters); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	if got := RequestID(context.Background()); got != "" {
		t.Errorf("RequestID outside the middleware = %q, want empty", got)
	}
	if !IsRequestIDKey(requestIDKey{}) || IsRequestIDKey("request_id") {
		t.Error("IsRequestIDKey does not tell its key from another")
	}
	ids.n.Store(1_234_566) // past six digits, the counter grows
	if got, want := ids.New(), ids.processPrefix()+"-1234567"; got != want {
		t.Errorf("next = %q, want %q", got, want)
	}
}

func TestHeadAsGet(t *testing.T) {
	t.Parallel()
	r := chi.NewRouter()
	r.Use(HeadAsGet)
	r.Get("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler", "get "+r.Method)
		_, _ = io.WriteString(w, "body")
	})
	r.Get("/both", func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Handler", "get") })
	r.Head("/both", func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Handler", "head") })
	r.Post("/form", func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Handler", "post") })
	tests := []struct {
		method, path string
		status       int
		handler      string
	}{
		{http.MethodHead, "/page", http.StatusOK, "get HEAD"},
		{http.MethodGet, "/page", http.StatusOK, "get GET"},
		{http.MethodHead, "/both", http.StatusOK, "head"},
		{http.MethodHead, "/form", http.StatusMethodNotAllowed, ""},
		{http.MethodHead, "/missing", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			r.ServeHTTP(w, httptest.NewRequest(tt.method, tt.path, nil))
			if w.Code != tt.status || w.Header().Get("X-Handler") != tt.handler {
				t.Errorf("%s %s: %d from %q, want %d from %q", tt.method, tt.path, w.Code, w.Header().Get("X-Handler"), tt.status, tt.handler)
			}
		})
	}
}

func TestStatusRecorder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler func(w http.ResponseWriter)
		status  int
		bytes   int
	}{
		{"nothing written", func(http.ResponseWriter) {}, http.StatusOK, 0},
		{"body only", func(w http.ResponseWriter) { fmt.Fprint(w, "hello") }, http.StatusOK, 5},
		{"status then body", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "no")
			fmt.Fprint(w, "pe")
		}, http.StatusNotFound, 4},
		{"interim status first", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusCreated)
		}, http.StatusCreated, 0},
		{"flush through ResponseController", func(w http.ResponseWriter) {
			fmt.Fprint(w, "x")
			if err := http.NewResponseController(w).Flush(); err != nil {
				panic(err)
			}
		}, http.StatusOK, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			under := httptest.NewRecorder()
			rec := &StatusRecorder{ResponseWriter: under}
			tt.handler(rec)
			if rec.Status() != tt.status || rec.Bytes() != tt.bytes {
				t.Errorf("Status %d, Bytes %d; want %d, %d", rec.Status(), rec.Bytes(), tt.status, tt.bytes)
			}
			if under.Body.Len() != tt.bytes {
				t.Errorf("%d bytes reached the writer, want %d", under.Body.Len(), tt.bytes)
			}
		})
	}
}

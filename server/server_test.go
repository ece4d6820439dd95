package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/store"
)

func TestStatusOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{store.Errorf(store.ErrNotFound, "no catalog %q", "x"), http.StatusNotFound},
		{fmt.Errorf("publish: %w", store.Errorf(store.ErrConflict, "taken")), http.StatusConflict},
		{store.Errorf(store.ErrForbidden, "not yours"), http.StatusForbidden},
		{store.Errorf(store.ErrUnauthorized, "no token"), http.StatusUnauthorized},
		{fmt.Errorf("search: %w", store.ErrBadPageToken), http.StatusBadRequest},
		{fmt.Errorf("create token: %w", store.Errorf(store.ErrInvalid, "not a DNS name")), http.StatusBadRequest},
		{&invalidDocument{message: "bad", findings: catalog.Findings{{Message: "m"}}}, http.StatusUnprocessableEntity},
		{&badRequest{message: "bad"}, http.StatusBadRequest},
		{&http.MaxBytesError{Limit: 4 << 20}, http.StatusRequestEntityTooLarge},
		{&upstreamError{message: "push failed", err: errors.New("down")}, http.StatusBadGateway},
		{&httpx.TooManyRequests{Message: "slow down"}, http.StatusTooManyRequests},
		{&bodyTimeout{after: time.Second}, http.StatusRequestTimeout},
		{errors.New("database exploded"), http.StatusInternalServerError},
	}
	for _, tc := range tests {
		got, msg, _ := statusOf(tc.err)
		if got != tc.want {
			t.Errorf("statusOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
		if got == http.StatusInternalServerError && msg != "internal error" {
			t.Errorf("an internal error leaks its cause to the client: %q", msg)
		}
	}
	if _, msg, _ := statusOf(&http.MaxBytesError{Limit: 4 << 20}); msg != "request body is larger than the limit of 4.0 MiB" {
		t.Errorf("413 message %q", msg)
	}
}

func TestContentNegotiation(t *testing.T) {
	t.Parallel()
	for accept, want := range map[string]bool{
		"":                                   false,
		"application/json":                   true,
		"application/json; charset=utf-8":    true,
		"text/html, application/json;q=0.9":  true,
		"application/yaml, application/json": false,
		"*/*":                                false,
		"text/yaml":                          false,
		"application/json;q=0.5, text/yaml":  false,
		"application/yaml;q=0.1, application/json": true,
		"application/yaml;q=0, */*":                true,
		"*/*;q=0.5, application/json":              true,
	} {
		if got := wantsJSON(accept); got != want {
			t.Errorf("wantsJSON(%q) = %v, want %v", accept, got, want)
		}
	}
}

func TestContentCache(t *testing.T) {
	t.Parallel()
	content := func(body string) *preparedContent {
		return prepare(store.Content{Name: "c", Bytes: []byte(body)})
	}
	t.Run("latest content is not cached while not following publishes", func(t *testing.T) {
		c := NewContentCache(1 << 20)
		c.put("latest:c", c.ticket("catalog:c"), content("v1"))
		if c.get([]byte("latest:c")) != nil {
			t.Error("cached without a live listener")
		}
		c.put("pinned:c@1", c.ticket(""), content("v1"))
		if c.get([]byte("pinned:c@1")) == nil {
			t.Error("immutable content was not cached")
		}
	})
	t.Run("a fill that raced with a publish is dropped", func(t *testing.T) {
		c := NewContentCache(1 << 20)
		c.setLive(true)
		tk := c.ticket("catalog:c")
		c.invalidate("catalog:c") // a publish committed while the store was read
		c.put("latest:c", tk, content("v1"))
		if c.get([]byte("latest:c")) != nil {
			t.Error("stale content was cached")
		}
		c.put("latest:c", c.ticket("catalog:c"), content("v2"))
		if got := c.get([]byte("latest:c")); got == nil || string(got.yaml.body) != "v2" {
			t.Error("fresh content was not cached")
		}
		c.invalidate("catalog:c")
		if c.get([]byte("latest:c")) != nil {
			t.Error("invalidation kept the entry")
		}
	})
	t.Run("losing the listener drops mutable entries", func(t *testing.T) {
		c := NewContentCache(1 << 20)
		c.setLive(true)
		c.put("latest:c", c.ticket("catalog:c"), content("v1"))
		c.put("pinned:c@1", c.ticket(""), content("v1"))
		c.setLive(false)
		if c.get([]byte("latest:c")) != nil || c.get([]byte("pinned:c@1")) == nil {
			t.Error("a disconnect must drop latest entries and keep pinned ones")
		}
	})
	t.Run("the cache stays within its size", func(t *testing.T) {
		c := NewContentCache(4000)
		c.setLive(true)
		for i := range 20 {
			c.put(fmt.Sprintf("pinned:c@%d", i), c.ticket(""), content(string(make([]byte, 300))))
		}
		if c.size > 4000 {
			t.Errorf("cache holds %d bytes, above its 4000", c.size)
		}
		if c.get([]byte("pinned:c@19")) == nil || c.get([]byte("pinned:c@0")) != nil {
			t.Error("the least recently used entries should go first")
		}
	})
}

// fakeRegistry answers signature statuses from a table and counts the questions.
type fakeRegistry struct {
	Registry
	mu       sync.Mutex
	statuses map[string]oci.SignatureStatus
	asked    []string
}

func (f *fakeRegistry) Evidence(_ context.Context, ref string, _ []sign.PublicKey) (oci.Evidence, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, ref)
	switch f.statuses[ref] {
	case oci.StatusVerified:
		return oci.Evidence{Signatures: []oci.Signature{{Verified: true}}}, nil
	case oci.StatusSigned:
		return oci.Evidence{Signatures: []oci.Signature{{}}}, nil
	}
	return oci.Evidence{}, nil
}

// fakeKeys has no keys and records nothing.
type fakeKeys struct{ KeyStore }

func (fakeKeys) SignatureChecks(context.Context, string, []string, time.Duration) (map[string]store.SignatureCheck, error) {
	return nil, nil
}
func (fakeKeys) SaveSignatureCheck(context.Context, string, store.SignatureCheck) error { return nil }
func (fakeKeys) ListKeys(context.Context, string) ([]store.Key, error)                  { return nil, nil }

func TestSignatureStatusesAskOncePerSubject(t *testing.T) {
	t.Parallel()
	// one subject is a substring of the other: both must be asked about, each once
	long, short := "registry.example.com/fn/a@sha256:00", "example.com/fn/a@sha256:00"
	reg := &fakeRegistry{statuses: map[string]oci.SignatureStatus{long: oci.StatusSigned, short: oci.StatusVerified}}
	sigs := NewSignatures(reg, fakeKeys{}, nil, nil)
	got := map[string]string{}
	for subject, c := range sigs.checks(context.Background(), "example.com", []string{long, short, long, short}) {
		got[subject] = c.Status
	}
	want := map[string]string{long: "signed", short: "verified"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if len(reg.asked) != 2 {
		t.Errorf("the registry was asked %d times (%v), want once per subject", len(reg.asked), reg.asked)
	}
}

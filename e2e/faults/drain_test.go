package faults

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// TestShutdownDelay checks that on SIGTERM serve reports not ready for --shutdown-delay while it
// still answers requests, database reads among them, and only then stops. Before, the listener
// closed at once: a load balancer that had not yet seen the replica fail readiness sent it
// requests that were refused.
func TestShutdownDelay(t *testing.T) {
	t.Parallel()
	p, _, _ := embedded(t, "--shutdown-delay", "4s")
	p.signal(syscall.SIGTERM)
	signaled := time.Now()
	p.waitStatus(t, "/readyz", http.StatusServiceUnavailable, 4*time.Second)
	client := &http.Client{Timeout: 2 * time.Second}
	for _, path := range []string{"/healthz", "/api/v1/catalogs/example-functions/versions", "/catalogs/example-functions/1.0.0/catalog.yaml"} {
		r := request(context.Background(), client, http.MethodGet, p.url+path, "", nil)
		if r.err != nil || r.status != http.StatusOK {
			t.Errorf("%s while draining: %d %v, want 200", path, r.status, r.err)
		}
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30 s of the drain")
	}
	if took := time.Since(signaled); took < 4*time.Second {
		t.Errorf("serve stopped %s after SIGTERM, before its 4 s shutdown delay", took.Round(time.Millisecond))
	}
}

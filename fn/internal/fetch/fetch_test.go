package fetch

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// A server that accepts the connection (the kernel does, into the listen backlog) and never
// answers fails the download once the timeout passes, naming the URL.
func TestHTTPSTimesOut(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// The context's deadline only keeps a missing bound from hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "https://" + ln.Addr().String() + "/fn"
	rc, err := HTTPS(ctx, nil, url, 100*time.Millisecond)
	if err == nil {
		rc.Close()
		t.Fatal("a server that never answers was read from")
	}
	if msg := err.Error(); !strings.Contains(msg, url) || !strings.Contains(msg, "Timeout exceeded") || ctx.Err() != nil {
		t.Errorf("error %q, want the URL and the client's timeout, before the test's deadline", msg)
	}
}

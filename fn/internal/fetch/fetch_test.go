package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// A redirect to plain http on another machine is refused before it is followed. A redirect to https,
// or to plain http on this machine, is followed, and a client given keeps its own redirect policy.
func TestHTTPSRefusesARedirectBeforeFollowingIt(t *testing.T) {
	t.Parallel()
	var plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		fmt.Fprint(w, "fn")
	}))
	t.Cleanup(plain.Close)
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-http":
			http.Redirect(w, r, "http://fn.example.invalid/fn", http.StatusFound)
		case "/to-loopback-http":
			http.Redirect(w, r, plain.URL+"/fn", http.StatusFound)
		case "/to-https":
			http.Redirect(w, r, "/fn", http.StatusFound)
		default:
			fmt.Fprint(w, "fn")
		}
	}))
	t.Cleanup(secure.Close)
	client := secure.Client()
	ctx := context.Background()

	rc, err := HTTPS(ctx, client, secure.URL+"/to-http", time.Minute)
	if err == nil {
		rc.Close()
		t.Fatal("a redirect to http was followed to the end")
	}
	if !strings.Contains(err.Error(), "neither https nor this machine") {
		t.Errorf("error %v, %d requests to the http server; want a refusal before any", err, plainHits.Load())
	}
	if client.CheckRedirect != nil {
		t.Error("the caller's client was changed")
	}

	rc, err = HTTPS(ctx, client, secure.URL+"/to-https", time.Minute)
	if err != nil {
		t.Fatalf("a redirect to https: %v", err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if string(body) != "fn" {
		t.Errorf("body %q", body)
	}

	for _, url := range []string{secure.URL + "/to-loopback-http", plain.URL + "/fn"} {
		rc, err := HTTPS(ctx, client, url, time.Minute)
		if err != nil {
			t.Fatalf("%s: plain http on this machine: %v", url, err)
		}
		rc.Close()
	}
	if plainHits.Load() != 2 {
		t.Errorf("%d requests to the loopback http server, want 2", plainHits.Load())
	}
	for _, url := range []string{"http://fn.example.invalid/fn", "http://10.0.0.1/fn", "http://127.0.0.1.example.invalid/fn"} {
		if _, err := HTTPS(ctx, client, url, time.Minute); err == nil || !strings.Contains(err.Error(), "not https") {
			t.Errorf("%s: plain http to another machine: %v, want it refused", url, err)
		}
	}
	if _, err := HTTPS(ctx, nil, secure.URL+"/fn", time.Minute); err == nil || !strings.Contains(err.Error(), "SSL_CERT_FILE") {
		t.Errorf("an untrusted certificate: %v, want a hint at SSL_CERT_FILE", err)
	}

	refuseAll := *client
	refuseAll.CheckRedirect = func(*http.Request, []*http.Request) error { return errors.New("no redirects here") }
	if _, err := HTTPS(ctx, &refuseAll, secure.URL+"/to-https", time.Minute); err == nil || !strings.Contains(err.Error(), "no redirects here") {
		t.Errorf("the client's own redirect policy was not kept: %v", err)
	}
}

package tlshint

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A certificate the client does not trust gets the hint; other errors are left alone.
func TestWrap(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, untrusted := http.DefaultClient.Do(req)
	tests := []struct {
		name     string
		err      error
		wantHint bool
	}{
		{"untrusted certificate", untrusted, true},
		{"other error", errors.New("connection refused"), false},
	}
	for _, tc := range tests {
		got := Wrap(tc.err)
		if has := strings.Contains(got.Error(), "SSL_CERT_FILE"); has != tc.wantHint {
			t.Errorf("%s: Wrap(%v) = %v, hint %v, want %v", tc.name, tc.err, got, has, tc.wantHint)
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("%s: the error is no longer wrapped", tc.name)
		}
	}
}

package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/apiclient"
	"github.com/krm-catalog/krm-catalog/store/storetest"
)

// TestSearchCommandAndCompletion runs `krm-catalog search` and the completion of `resolve` against
// the real service on real PostgreSQL, with the example catalog published.
func TestSearchCommandAndCompletion(t *testing.T) {
	s := startService(t, storetest.NewDatabase(t))
	tok := token(t, s, "example.com")
	if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/example-functions/versions/1.0.0", tok, exampleCatalog(t)); r.status != http.StatusCreated {
		t.Fatalf("publish: %d %s", r.status, r.body)
	}

	t.Run("table", func(t *testing.T) {
		code, out, errOut := runCLI(t, "search", "--server", s.url, "namespace")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "FUNCTION") || !strings.HasPrefix(lines[1], "fn.example.com/SetNamespace ") ||
			!strings.Contains(lines[1], "example.com") || !strings.Contains(lines[len(lines)-1], "function(s)") {
			t.Errorf("table:\n%s", out)
		}
	})
	t.Run("json with facets, server from the environment", func(t *testing.T) {
		t.Setenv("KRM_CATALOG_SERVER", s.url)
		// every facet filter at once, as the service narrows them
		want := apiclient.SearchResult{}
		if err := json.Unmarshal(do(t, http.MethodGet, s.url+"/api/v1/functions?runtime=exec&publisher=example.com", "", nil).body, &want); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCLI(t, "search", "--format", "json", "--runtime", "exec", "--publisher", "example.com")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var got apiclient.SearchResult
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if d := cmp.Diff(want, got); d != "" || len(got.Functions) == 0 {
			t.Errorf("search --format json (-service +cli):\n%s", d)
		}
		for _, f := range got.Functions {
			if !strings.Contains(strings.Join(f.Runtimes, ","), "exec") {
				t.Errorf("%s/%s has runtimes %v, asked for exec", f.Group, f.Kind, f.Runtimes)
			}
		}
		code, out, _ = runCLI(t, "search", "--tag", "no-such-tag")
		if code != 0 || !strings.Contains(out, "no functions found") {
			t.Errorf("no results: exit %d, %q", code, out)
		}
	})
	t.Run("resolve completes kinds from the service", func(t *testing.T) {
		t.Setenv("KRM_CATALOG_SERVER", s.url)
		t.Setenv("KRM_CATALOG_BUILTIN", "")
		_, out, _ := runCLI(t, "__complete", "resolve", "fn.example.com/")
		if !strings.Contains(out, "fn.example.com/v1\t") || !strings.Contains(out, "SetNamespace") {
			t.Errorf("apiVersions:\n%s", out)
		}
		_, out, _ = runCLI(t, "__complete", "resolve", "fn.example.com/v1", "SetN")
		if first := strings.SplitN(out, "\n", 2)[0]; !strings.HasPrefix(first, "SetNamespace\t") {
			t.Errorf("kinds:\n%s", out)
		}
	})
	t.Run("errors", func(t *testing.T) {
		t.Setenv("KRM_CATALOG_SERVER", "")
		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"search", "x", "--server", closedURL(t)}, 1, "is `krm-catalog serve` running there?"},
			{[]string{"search", "--server", s.url, "--limit", "1000"}, 2, "limit must be"},
			{[]string{"search", "--server", s.url, "--format", "yaml"}, 2, "--format must be"},
		} {
			code, _, errOut := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v: exit %d %q, want %d mentioning %q", tc.args, code, errOut, tc.code, tc.want)
			}
		}
	})
}

// closedURL is the URL of a 127.0.0.1 port on which nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

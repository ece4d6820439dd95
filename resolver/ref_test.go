package resolver

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Ref
	}{
		{"catalog.yaml", Ref{Kind: RefPath, Path: "catalog.yaml"}},
		{"../shared/catalog.yaml", Ref{Kind: RefPath, Path: "../shared/catalog.yaml"}},
		{"https://example.com/catalogs/platform/catalog.yaml", Ref{Kind: RefURL, URL: "https://example.com/catalogs/platform/catalog.yaml"}},
		{"http://127.0.0.1:8080/catalogs/x/catalog.yaml", Ref{Kind: RefURL, URL: "http://127.0.0.1:8080/catalogs/x/catalog.yaml"}},
		{"http://localhost/catalog.yaml", Ref{Kind: RefURL, URL: "http://localhost/catalog.yaml"}},
		{"http://[::1]:8080/catalog.yaml", Ref{Kind: RefURL, URL: "http://[::1]:8080/catalog.yaml"}},
		{"oci://registry.example.com/catalogs/platform:v1", Ref{Kind: RefOCI, OCI: "registry.example.com/catalogs/platform:v1"}},
		{"oci://127.0.0.1:5000/c@sha256:" + strings.Repeat("a", 64), Ref{Kind: RefOCI, OCI: "127.0.0.1:5000/c@sha256:" + strings.Repeat("a", 64)}},
		{"git::https://example.com/org/repo//catalogs/catalog.yaml?ref=v1.2.0", Ref{Kind: RefGit, URL: "https://example.com/org/repo", Path: "catalogs/catalog.yaml", GitRef: "v1.2.0"}},
		{"git::https://example.com/org/repo.git", Ref{Kind: RefGit, URL: "https://example.com/org/repo.git", Path: "catalog.yaml"}},
		{"git::file:///srv/git/catalogs.git//platform/catalog.yaml?ref=main", Ref{Kind: RefGit, URL: "file:///srv/git/catalogs.git", Path: "platform/catalog.yaml", GitRef: "main"}},
		{"git::ssh://git@example.com/org/repo.git//c.yaml?version=abc123", Ref{Kind: RefGit, URL: "ssh://git@example.com/org/repo.git", Path: "c.yaml", GitRef: "abc123"}},
		{"git::git@example.com:org/repo.git//dir/c.yaml?ref=release/1.0", Ref{Kind: RefGit, URL: "git@example.com:org/repo.git", Path: "dir/c.yaml", GitRef: "release/1.0"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseRef(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Raw = tc.in
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRefErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "empty"},
		{"http://example.com/catalog.yaml", "plain http to another machine"},
		{"http://127.0.0.1.example.com/catalog.yaml", "plain http to another machine"},
		{"http://10.0.0.1:8080/catalog.yaml", "plain http to another machine"},
		{"ftp://example.com/catalog.yaml", "a catalog is a path"},
		{"https://user:pw@example.com/c.yaml", "credentials"},
		{"oci://", "oci"},
		{"git::https://example.com/repo//../../etc/passwd?ref=main", "inside the repository"},
		{"git::https://example.com/repo///abs.yaml", "inside the repository"},
		{"git::ext::sh -c touch% /tmp/pwned//c.yaml", "white space"},
		{"git::ext::sh%20-c%20x//c.yaml", "the repository must be a URL"},
		{"git::http://example.com/repo//c.yaml", "plain http"},
		{"git::https://example.com/repo//c.yaml?ref=--upload-pack=x", "not a valid git ref"},
		{"git::https://example.com/repo//c.yaml?ref=a..b", "not a valid git ref"},
		{"git::https://example.com/repo//c.yaml?depth=1", "unknown query parameter"},
		{"git::https://example.com/repo//c.yaml?ref=a&ref=b", "one non-empty ref"},
		{"git::-oProxyCommand=x:repo", "the repository must be a URL"},
		{"git::https:////c.yaml", "no repository"},
		{"a\nb", "control character"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			_, err := ParseRef(tc.in)
			if !errors.Is(err, ErrInvalidReference) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseRef(%q) error = %v, want ErrInvalidReference containing %q", tc.in, err, tc.want)
			}
		})
	}
}

// FuzzParseRef: catalog references come from command lines and Composition files. Parsing must not
// panic, and a git reference it accepts must be safe to hand to the git command line: no option
// injection, no path leaving the repository.
//
//	go test ./resolver -run '^$' -fuzz FuzzParseRef -fuzztime 30s
func FuzzParseRef(f *testing.F) {
	for _, seed := range []string{
		"catalog.yaml",
		"git::https://example.com/org/repo//catalogs/catalog.yaml?ref=v1.2.0",
		"git::git@example.com:org/repo.git//dir/c.yaml?ref=release/1.0",
		"git::file:///srv/git/c.git?ref=main",
		"git::https://example.com/repo//../x?ref=-x",
		"oci://registry.example.com/c:v1",
		"https://example.com/c.yaml",
		"git::?ref=",
		"git::://",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil || r.Kind != RefGit {
			return
		}
		if strings.HasPrefix(r.URL, "-") || strings.HasPrefix(r.GitRef, "-") {
			t.Fatalf("option-like git argument accepted: %+v", r)
		}
		if r.Path == "" || strings.HasPrefix(r.Path, "/") || r.Path == ".." || strings.HasPrefix(r.Path, "../") {
			t.Fatalf("path outside the repository accepted: %+v", r)
		}
		if strings.HasPrefix(r.URL, "ext::") || strings.HasPrefix(r.URL, "http://") {
			t.Fatalf("unsafe transport accepted: %+v", r)
		}
	})
}

package exec

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/fn"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

type entry struct {
	name     string
	body     string
	typeflag byte
	link     string
}

func tarGz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		tf := e.typeflag
		if tf == 0 {
			tf = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Mode: 0o755, Size: int64(len(e.body)), Typeflag: tf, Linkname: e.link}
		if tf != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if tf == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tlsFiles serves files over TLS and counts the requests for each.
func tlsFiles(t *testing.T, files map[string][]byte) (*httptest.Server, map[string]*atomic.Int32) {
	t.Helper()
	hits := map[string]*atomic.Int32{}
	for p := range files {
		hits[p] = &atomic.Int32{}
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		hits[r.URL.Path].Add(1)
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

func TestStoreGet(t *testing.T) {
	t.Parallel()
	raw := []byte("#!/bin/sh\necho raw\n")
	inner := "#!/bin/sh\necho archived\n"
	archive := tarGz(t, entry{name: "README.md", body: "docs"}, entry{name: "./bin/fn", body: inner})
	srv, hits := tlsFiles(t, map[string][]byte{"/fn": raw, "/fn.tar.gz": archive, "/blob": archive})
	tests := []struct {
		name     string
		platform catalog.ExecPlatform
		want     string
	}{
		{"raw", catalog.ExecPlatform{Bin: "fn", URI: srv.URL + "/fn", SHA256: sum(raw)}, string(raw)},
		{"tar.gz by name", catalog.ExecPlatform{Bin: "bin/fn", URI: srv.URL + "/fn.tar.gz", SHA256: sum(archive)}, inner},
		{"tar.gz by magic", catalog.ExecPlatform{Bin: "bin/fn", URI: srv.URL + "/blob", SHA256: "sha256:" + sum(archive)}, inner},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &Store{Dir: t.TempDir(), HTTPClient: srv.Client()}
			p, err := s.Get(context.Background(), tc.platform)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("content = %q, want %q", got, tc.want)
			}
			if st, _ := os.Stat(p); st.Mode().Perm()&0o111 == 0 {
				t.Errorf("%s is not executable: %v", p, st.Mode())
			}
			// a second store over the same directory uses the cache
			before := hits[strings.TrimPrefix(tc.platform.URI, srv.URL)].Load()
			s2 := &Store{Dir: s.Dir, HTTPClient: srv.Client()}
			if p2, err := s2.Get(context.Background(), tc.platform); err != nil || p2 != p {
				t.Fatalf("cached Get = %s, %v", p2, err)
			}
			if after := hits[strings.TrimPrefix(tc.platform.URI, srv.URL)].Load(); after != before {
				t.Errorf("the cached executable was downloaded again")
			}
			// a cached file changed on disk is not used: it is fetched again, even when the change
			// keeps its size and modification time (the stamp also holds the change time)
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			same := bytes.Repeat([]byte("#"), int(st.Size()))
			if err := os.WriteFile(p, same, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
				t.Fatal(err)
			}
			s3 := &Store{Dir: s.Dir, HTTPClient: srv.Client()}
			p3, err := s3.Get(context.Background(), tc.platform)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(p3); string(got) != tc.want {
				t.Errorf("after tampering the cache served %q", got)
			}
		})
	}
}

func TestStoreRefusesWrongDigest(t *testing.T) {
	t.Parallel()
	good := []byte("#!/bin/sh\necho good\n")
	evil := []byte("#!/bin/sh\ntouch /tmp/evil\n")
	srv, _ := tlsFiles(t, map[string][]byte{"/fn": evil})
	dir := t.TempDir()
	s := &Store{Dir: dir, HTTPClient: srv.Client()}
	_, err := s.Get(context.Background(), catalog.ExecPlatform{Bin: "fn", URI: srv.URL + "/fn", SHA256: sum(good)})
	if !errors.Is(err, fn.ErrDigestMismatch) {
		t.Fatalf("error = %v, want ErrDigestMismatch", err)
	}
	// nothing is left behind, executable or not
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("left in the cache: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestStoreErrors(t *testing.T) {
	t.Parallel()
	bad := tarGz(t, entry{name: "../../evil", body: "x"}, entry{name: "fn", body: "y"})
	srv, _ := tlsFiles(t, map[string][]byte{"/bad.tar.gz": bad})
	s := &Store{Dir: t.TempDir(), HTTPClient: srv.Client()}
	tests := []struct {
		name string
		p    catalog.ExecPlatform
		want string
	}{
		{"no sha256", catalog.ExecPlatform{URI: srv.URL + "/x"}, "no valid sha256"},
		{"plain http", catalog.ExecPlatform{URI: "http://example.com/fn", SHA256: sum(nil)}, "not https"},
		{"404", catalog.ExecPlatform{URI: srv.URL + "/missing", SHA256: sum(nil)}, "404"},
		{"oci without client", catalog.ExecPlatform{URI: "oci://registry.example.com/fn:v1", SHA256: sum(nil)}, "no OCI client"},
		{"unsafe archive", catalog.ExecPlatform{Bin: "fn", URI: srv.URL + "/bad.tar.gz", SHA256: sum(bad)}, "unsafe archive"},
	}
	for _, tc := range tests {
		if _, err := s.Get(context.Background(), tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestExtractFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entries []entry
		bin     string
		want    string // content, or the error
		wantErr bool
	}{
		{"named", []entry{{name: "a"}, {name: "dir/fn", body: "FN"}}, "dir/fn", "FN", false},
		{"dot slash", []entry{{name: "./fn", body: "FN"}}, "fn", "FN", false},
		{"only file", []entry{{name: "fn", body: "FN"}}, "", "FN", false},
		{"dotdot entry", []entry{{name: "fn", body: "FN"}, {name: "a/../../x", body: "x"}}, "fn", "unsafe archive", true},
		{"absolute entry", []entry{{name: "/etc/passwd", body: "x"}, {name: "fn", body: "FN"}}, "fn", "absolute path", true},
		{"windows absolute", []entry{{name: "C:\\x", body: "x"}, {name: "fn", body: "FN"}}, "fn", "absolute path", true},
		{"symlink out", []entry{{name: "fn", typeflag: tar.TypeSymlink, link: "/bin/sh"}}, "fn", "points to", true},
		{"bin is a symlink", []entry{{name: "fn", typeflag: tar.TypeSymlink, link: "other"}, {name: "other", body: "x"}}, "fn", "not a regular file", true},
		{"missing", []entry{{name: "a", body: "x"}}, "fn", "has no file", true},
		{"twice", []entry{{name: "fn", body: "1"}, {name: "./fn", body: "2"}}, "fn", "twice", true},
		{"ambiguous", []entry{{name: "a", body: "1"}, {name: "b", body: "2"}}, "", "more than one", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := ExtractFile(bytes.NewReader(tarGz(t, tc.entries...)), tc.bin, &out)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
	if err := ExtractFile(strings.NewReader("not gzip"), "fn", &bytes.Buffer{}); err == nil {
		t.Error("non-gzip input accepted")
	}
}

// FuzzExtractFile: archives come from the network (after the digest check, but a catalog author
// may be careless or hostile). Extraction must not panic, and whatever it accepts came from an
// archive whose entries are all relative and free of "..".
//
//	go test ./fn/runtime/exec -run '^$' -fuzz FuzzExtractFile -fuzztime 30s
func FuzzExtractFile(f *testing.F) {
	f.Add(tarGz(f, entry{name: "fn", body: "FN"}), "fn")
	f.Add(tarGz(f, entry{name: "a/../../x", body: "x"}, entry{name: "fn", body: "FN"}), "fn")
	f.Add(tarGz(f, entry{name: "/abs", body: "x"}), "")
	f.Add(tarGz(f, entry{name: "fn", typeflag: tar.TypeSymlink, link: "../x"}), "fn")
	f.Add([]byte("\x1f\x8b\x08\x00"), "fn")
	f.Fuzz(func(t *testing.T, data []byte, bin string) {
		var out bytes.Buffer
		if err := ExtractFile(bytes.NewReader(data), bin, &out); err != nil {
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal("accepted input that is not gzip")
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err != nil {
				return
			}
			if checkEntryName(h.Name) != nil {
				t.Fatalf("accepted an archive with the entry %q", h.Name)
			}
		}
	})
}

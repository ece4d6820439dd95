// Package exec runs KRM functions as native executables: it fetches the executable for the running
// platform (over https, raw or in a .tar.gz, or from an OCI exec artifact), checks its sha256 before
// it is ever made executable, keeps it in a cache keyed by that digest, and runs it with the v1 wire
// protocol.
package exec

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/internal/fetch"
	"github.com/krm-catalog/krm-catalog/internal/lazyre"
)

// MaxBinaryBytes bounds a downloaded executable or archive.
const MaxBinaryBytes = 512 << 20

// ArtifactFetcher reads the exec artifact (application/vnd.cncf.kubernetes.krm-func-runtime-exec.layer.v1)
// at an OCI reference for one platform (p.OS, p.Arch; p.SHA256 is what the catalog pins): the
// executable, or a .tar.gz holding it. The content is checked here against p.SHA256, whatever the
// fetcher checks itself.
type ArtifactFetcher interface {
	FetchExec(ctx context.Context, ref string, p catalog.ExecPlatform) (io.ReadCloser, error)
}

// Store is the verified cache of executables: <Dir>/<sha256>/<name>, where sha256 is the digest the
// catalog pins (of the executable, or of the archive it came in). It is safe for concurrent use.
type Store struct {
	// Dir is the cache root.
	Dir string
	// HTTPClient downloads https URIs; nil uses a client with a five-minute timeout.
	HTTPClient *http.Client
	// OCI fetches oci:// URIs; nil makes them an error.
	OCI ArtifactFetcher

	mu       sync.Mutex
	verified map[string]bool // cache paths checked in this process
}

var hex64 = lazyre.New(`^[0-9a-f]{64}$`)

// Get returns the path of the verified executable for a platform, downloading it when the cache
// lacks it. Nothing is made executable before its digest matches.
func (s *Store) Get(ctx context.Context, p catalog.ExecPlatform) (string, error) {
	want := strings.ToLower(strings.TrimPrefix(p.SHA256, "sha256:"))
	if !hex64().MatchString(want) {
		return "", fmt.Errorf("exec %s: the catalog gives no valid sha256 for %s/%s", p.URI, p.OS, p.Arch)
	}
	name := binName(p)
	dir := filepath.Join(s.Dir, want)
	final := filepath.Join(dir, name)
	if ok, err := s.cached(final, want); err != nil {
		return "", err
	} else if ok {
		return final, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("exec cache: %w", err)
	}
	src, err := s.open(ctx, p)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", p.URI, err)
	}
	defer src.Close()

	// 1. stream into a private, non-executable temporary file, hashing on the way
	tmp, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return "", fmt.Errorf("exec cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(src, MaxBinaryBytes+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", p.URI, err)
	}
	if n > MaxBinaryBytes {
		return "", fmt.Errorf("fetch %s: larger than %d bytes", p.URI, MaxBinaryBytes)
	}
	// 2. the digest decides, before anything is executable
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return "", fmt.Errorf("%w: %s has sha256 %s, the catalog pins %s; it was not run", fn.ErrDigestMismatch, p.URI, got, want)
	}
	binPath := tmp.Name()
	if isArchive(p.URI, tmp.Name()) {
		extracted, sum, err := extractTo(tmp.Name(), dir, p.Bin)
		if err != nil {
			return "", fmt.Errorf("unpack %s: %w", p.URI, err)
		}
		defer os.Remove(extracted)
		binPath = extracted
		// the archive's digest is the cache key; the executable's own digest is recorded beside
		// it so that later runs can check the file they execute
		if err := os.WriteFile(filepath.Join(dir, "."+name+".sha256"), []byte(sum), 0o644); err != nil {
			return "", fmt.Errorf("exec cache: %w", err)
		}
	}
	// 3. only now executable, and moved into place in one step
	if err := os.Chmod(binPath, 0o755); err != nil {
		return "", fmt.Errorf("exec cache: %w", err)
	}
	if err := os.Rename(binPath, final); err != nil {
		return "", fmt.Errorf("exec cache: %w", err)
	}
	s.markVerified(final)
	return final, nil
}

// cached reports whether final is in the cache and still has the digest it was stored with. A
// cached file that no longer matches is removed and fetched again.
func (s *Store) cached(final, want string) (bool, error) {
	s.mu.Lock()
	ok := s.verified[final]
	s.mu.Unlock()
	if ok {
		return true, nil
	}
	st, err := os.Stat(final)
	if err != nil {
		return false, nil
	}
	if stamp, err := os.ReadFile(stampPath(final)); err == nil && len(stamp) > 0 && string(stamp) == fileStamp(st) {
		// hashed when it was stored and not changed since (same size, modification time and inode):
		// hashing a large executable on every run would cost more than the run
		s.markVerified(final)
		return true, nil
	}
	expect := want
	if rec, err := os.ReadFile(filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+".sha256")); err == nil {
		expect = strings.TrimSpace(string(rec))
	}
	got, err := fileSHA256(final)
	if err != nil {
		return false, fmt.Errorf("exec cache: %w", err)
	}
	if got != expect {
		_ = os.Remove(final)
		return false, nil
	}
	s.markVerified(final)
	return true, nil
}

// markVerified records that p matched its digest: for this process, and on disk as a stamp of the
// file's size, modification time and inode, which a later run compares instead of hashing again.
func (s *Store) markVerified(p string) {
	s.mu.Lock()
	if s.verified == nil {
		s.verified = map[string]bool{}
	}
	s.verified[p] = true
	s.mu.Unlock()
	if st, err := os.Stat(p); err == nil && fileStamp(st) != "" {
		_ = os.WriteFile(stampPath(p), []byte(fileStamp(st)), 0o644) // an optimisation: failing is fine
	}
}

func stampPath(p string) string { return filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".stamp") }

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (s *Store) open(ctx context.Context, p catalog.ExecPlatform) (io.ReadCloser, error) {
	if ref, ok := strings.CutPrefix(p.URI, "oci://"); ok {
		if s.OCI == nil {
			return nil, errors.New("no OCI client is configured for oci:// executables")
		}
		return s.OCI.FetchExec(ctx, ref, p)
	}
	if !strings.HasPrefix(p.URI, "https://") && !strings.HasPrefix(p.URI, "http://") {
		return nil, errors.New("an executable is fetched over https:// (plain http:// only from this machine) or oci:// only")
	}
	return fetch.HTTPS(ctx, s.HTTPClient, p.URI, 5*time.Minute)
}

// binName is the file name the executable gets in the cache.
func binName(p catalog.ExecPlatform) string {
	if p.Bin != "" {
		if b := path.Base(p.Bin); b != "." && b != "/" && b != ".." {
			return b
		}
	}
	return "function"
}

// isArchive tells a .tar.gz by its name or, failing that, by the gzip magic number.
func isArchive(uri, file string) bool {
	u := strings.ToLower(uri)
	if strings.HasSuffix(u, ".tar.gz") || strings.HasSuffix(u, ".tgz") {
		return true
	}
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [2]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && magic[0] == 0x1f && magic[1] == 0x8b
}

// extractTo unpacks the entry bin of a verified .tar.gz into a temporary file in dir and returns its
// path and sha256.
func extractTo(archive, dir, bin string) (string, string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	out, err := os.CreateTemp(dir, ".extract-*")
	if err != nil {
		return "", "", err
	}
	h := sha256.New()
	err = ExtractFile(bufio.NewReader(f), bin, io.MultiWriter(out, h))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out.Name())
		return "", "", err
	}
	return out.Name(), hex.EncodeToString(h.Sum(nil)), nil
}

// ErrUnsafeArchive: an archive holds an entry that would land outside the directory it is unpacked in.
var ErrUnsafeArchive = errors.New("unsafe archive")

// ExtractFile reads a gzip-compressed tar stream and copies the regular file named bin into w. Every
// entry is checked, also after bin: an absolute name, a name with a ".." element, or a link pointing
// to one, makes the whole archive refused (and the caller discards what w received). bin must be a
// regular file and appear once. When bin is empty the archive must hold exactly one regular file.
func ExtractFile(r io.Reader, bin string, w io.Writer) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not a .tar.gz: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	want := ""
	if bin != "" {
		want = path.Clean(strings.TrimPrefix(bin, "./"))
	}
	found := 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		if err := checkEntryName(hdr.Name); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink {
			if err := checkEntryName(hdr.Linkname); err != nil {
				return fmt.Errorf("%w: link %q points to %q", ErrUnsafeArchive, hdr.Name, hdr.Linkname)
			}
		}
		isReg := hdr.Typeflag == tar.TypeReg || hdr.Typeflag == tar.TypeRegA //nolint:staticcheck // old archives use it
		clean := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if want != "" && clean != want || want == "" && !isReg {
			continue
		}
		if !isReg {
			return fmt.Errorf("%s in the archive is not a regular file", hdr.Name)
		}
		if found++; found > 1 {
			if want == "" {
				return errors.New("the archive holds more than one file and the catalog names no bin to choose")
			}
			return fmt.Errorf("%s appears twice in the archive", hdr.Name)
		}
		if hdr.Size > MaxBinaryBytes {
			return fmt.Errorf("%s in the archive is larger than %d bytes", hdr.Name, MaxBinaryBytes)
		}
		if _, err := io.Copy(w, io.LimitReader(tr, MaxBinaryBytes)); err != nil {
			return fmt.Errorf("read %s from the archive: %w", hdr.Name, err)
		}
	}
	switch {
	case found == 0 && want != "":
		return fmt.Errorf("the archive has no file %q", bin)
	case found == 0:
		return errors.New("the archive holds no regular file")
	}
	return nil
}

func checkEntryName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: an entry has no name", ErrUnsafeArchive)
	}
	if path.IsAbs(name) || strings.HasPrefix(name, "\\") || (len(name) > 1 && name[1] == ':') {
		return fmt.Errorf("%w: entry %q has an absolute path", ErrUnsafeArchive, name)
	}
	for _, el := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if el == ".." {
			return fmt.Errorf("%w: entry %q has a \"..\" element", ErrUnsafeArchive, name)
		}
	}
	return nil
}

package resolver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/lazyre"

	"github.com/krm-catalog/krm-catalog/internal/atomicfile"
	"github.com/krm-catalog/krm-catalog/internal/loopback"
	"github.com/krm-catalog/krm-catalog/internal/tlshint"
)

// CatalogPuller pulls a catalog stored as an OCI artifact (media type
// application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml). Implementations verify the
// signature when the user gave keys, and fail when it does not verify.
type CatalogPuller interface {
	PullCatalog(ctx context.Context, ref string) ([]byte, error)
}

// fetchFile reads a catalog from disk.
func fetchFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f)
}

func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, catalog.MaxInputBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > catalog.MaxInputBytes {
		return nil, fmt.Errorf("larger than the %d byte limit", catalog.MaxInputBytes)
	}
	return data, nil
}

// httpsCache keeps catalogs fetched over https with their ETag, so that the next fetch is a
// conditional request (If-None-Match) answered by 304 when nothing changed.
type httpsCache struct {
	client *http.Client
	dir    string // "" disables the cache
}

type cacheMeta struct {
	URL  string `json:"url"`
	ETag string `json:"etag"`
}

func (c httpsCache) paths(u string) (body, meta string) {
	sum := sha256.Sum256([]byte(u))
	key := hex.EncodeToString(sum[:])
	return filepath.Join(c.dir, key+".body"), filepath.Join(c.dir, key+".json")
}

// fetch gets url, revalidating a cached copy with its ETag. A catalog that cannot be fetched is an
// error even when a cached copy exists: the catalog decides what runs, and a stale one must not be
// used silently.
func (c httpsCache) fetch(ctx context.Context, u string) ([]byte, error) {
	var cached []byte
	var meta cacheMeta
	bodyPath, metaPath := "", ""
	if c.dir != "" {
		bodyPath, metaPath = c.paths(u)
		if m, err := os.ReadFile(metaPath); err == nil && json.Unmarshal(m, &meta) == nil && meta.URL == u && meta.ETag != "" {
			if b, err := os.ReadFile(bodyPath); err == nil {
				cached = b
			}
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/yaml, text/yaml;q=0.9, application/json;q=0.8, */*;q=0.1")
	if cached != nil {
		req.Header.Set("If-None-Match", meta.ETag)
	}
	client := http.Client{Timeout: 30 * time.Second}
	if c.client != nil {
		client = *c.client
	}
	// a redirect is refused before it is followed when it leaves https for another machine
	client.CheckRedirect = loopback.CheckRedirect(client.CheckRedirect)
	resp, err := client.Do(req)
	if err != nil {
		return nil, tlshint.Wrap(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && cached != nil:
		return cached, nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	data, err := readLimited(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if etag := resp.Header.Get("ETag"); etag != "" && c.dir != "" {
		// the cache is an optimisation: failing to write it does not fail the fetch
		if err := os.MkdirAll(c.dir, 0o755); err == nil {
			m, _ := json.Marshal(cacheMeta{URL: u, ETag: etag})
			if atomicfile.WriteFile(bodyPath, data, 0o600) == nil {
				_ = atomicfile.WriteFile(metaPath, m, 0o600)
			}
		}
	}
	return data, nil
}

var fullSHA = lazyre.New(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// gitFetcher reads one file of a git repository at a ref with the git command line, so that the
// user's git configuration (credentials, proxies, URL rewrites) applies as it does for kustomize.
type gitFetcher struct {
	git string // the git binary; "git" from PATH when empty
}

func (g gitFetcher) fetch(ctx context.Context, r Ref) ([]byte, error) {
	bin := g.git
	if bin == "" {
		bin = "git"
	}
	dir, err := os.MkdirTemp("", "krm-catalog-git-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	run := func(args ...string) ([]byte, error) {
		// ext:: runs commands; never allow it, whatever the user's configuration says
		full := append([]string{"-c", "protocol.ext.allow=never", "-C", dir}, args...)
		cmd := exec.CommandContext(ctx, bin, full...)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = err.Error()
			}
			return nil, fmt.Errorf("git %s: %s", args[0], msg)
		}
		return stdout.Bytes(), nil
	}
	if _, err := run("init", "-q"); err != nil {
		return nil, err
	}
	ref := r.GitRef
	if ref == "" {
		ref = "HEAD"
	}
	if _, err := run("fetch", "-q", "--depth", "1", "--", r.URL, ref); err != nil {
		// servers refuse shallow fetches of a bare commit id unless configured to allow them; fetch
		// everything and find the commit locally instead
		if !fullSHA().MatchString(ref) {
			return nil, err
		}
		if _, err2 := run("fetch", "-q", "--", r.URL, "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"); err2 != nil {
			return nil, err
		}
		return run("show", ref+":"+r.Path)
	}
	return run("show", "FETCH_HEAD:"+r.Path)
}

// fetchRef reads the bytes of the catalog a reference names.
func (res *Resolver) fetchRef(ctx context.Context, r Ref) ([]byte, error) {
	switch r.Kind {
	case RefPath:
		return fetchFile(r.Path)
	case RefURL:
		return res.https.fetch(ctx, r.URL)
	case RefGit:
		return res.git.fetch(ctx, r)
	case RefOCI:
		if res.oci == nil {
			return nil, errors.New("no OCI client is configured for oci:// catalogs")
		}
		return res.oci.PullCatalog(ctx, r.OCI)
	}
	return nil, fmt.Errorf("unknown reference kind %d", r.Kind)
}

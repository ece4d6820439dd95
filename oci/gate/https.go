package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/loopback"
	"github.com/krm-catalog/krm-catalog/oci"
)

// fetchTimeout bounds one download of an https artifact, as the exec runtime bounds it.
const fetchTimeout = 5 * time.Minute

// Why a check was not done (Check.Skipped); the summary counts them by reason.
const (
	SkippedOffline    = "offline"
	SkippedUnpinned   = "not pinned"
	SkippedNoRegistry = "no registry host"
)

// checkHTTPS checks an exec binary or starlark script that a document names by an https URL.
// Such a file cannot carry a signature: with signatures required that fails the check, naming the
// way to publish it so that it can be signed; with keys given, it is a warning. Otherwise it is
// downloaded and its sha256 compared with the document's while it streams, bounded by MaxSize.
func (g *Gate) checkHTTPS(ctx context.Context, c *Check, uri, sha, shaPointer string, kind oci.Kind) {
	if len(g.opts.Keys) > 0 {
		sev := catalog.SeverityWarning
		if g.opts.RequireSignatures {
			sev = catalog.SeverityError
		}
		scheme := "https"
		if strings.HasPrefix(uri, "http://") {
			scheme = "plain http"
		}
		c.add(sev, c.Pointer, "%s is fetched over %s, which cannot carry a signature: publish it as an OCI artifact (krm-catalog push --type %s) and name it by oci:// so that it can be signed (krm-catalog sign)", uri, scheme, kind)
		if g.opts.RequireSignatures {
			return // it fails whatever its bytes are
		}
	}
	if sha == "" {
		return // validation reported the missing pin
	}
	got, err := g.fetchSHA256(ctx, uri)
	switch {
	case err != nil:
		c.add(catalog.SeverityError, c.Pointer, "%v", err)
	case got != strings.ToLower(sha):
		c.add(catalog.SeverityError, shaPointer, "the document records sha256 %s, but %s holds %s", sha, uri, got)
	default:
		c.Digest = "sha256:" + got
	}
}

// fetchSHA256 downloads uri and returns the hex sha256 of what it holds, reading at most MaxSize
// bytes: a declared length past it is refused before the body is read, a body that grows past it
// is stopped there.
func (g *Gate) fetchSHA256(ctx context.Context, uri string) (string, error) {
	if sum, ok := g.fetched[uri]; ok {
		return sum.sha, sum.err
	}
	sha, err := g.download(ctx, uri)
	g.fetched[uri] = fetched{sha, err}
	return sha, err
}

type fetched struct {
	sha string
	err error
}

func (g *Gate) download(ctx context.Context, uri string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", uri, err)
	}
	if !loopback.Secure(req.URL) {
		return "", fmt.Errorf("fetch %s: not https (plain http only to this machine)", uri)
	}
	client := *g.opts.HTTPClient
	client.Timeout = 0 // the context bounds the whole download; a binary may take more than a minute
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", uri, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("fetch %s: %s", uri, resp.Status)
	}
	limit := g.opts.MaxSize
	if resp.ContentLength > limit {
		return "", fmt.Errorf("fetch %s: %d bytes, more than --max-size (%d bytes)", uri, resp.ContentLength, limit)
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("fetch %s: %w", uri, err)
	case n > limit:
		return "", fmt.Errorf("fetch %s: more than --max-size (%d bytes)", uri, limit)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/loopback"
	"github.com/krm-catalog/krm-catalog/oci"
)

func (c *Check) add(sev catalog.Severity, pointer, format string, args ...any) {
	line, col := c.Line, c.Column
	if c.position != nil && pointer != c.Pointer {
		line, col = c.position(pointer)
	}
	c.Findings = append(c.Findings, catalog.Finding{
		Severity: sev, Message: fmt.Sprintf(format, args...), File: c.File, Document: c.Document,
		Pointer: pointer, Line: line, Column: col,
	})
}

// done sets OK from the findings.
func (c Check) done() Check {
	c.OK = !c.Findings.HasErrors()
	return c
}

// checkContainer checks that a pinned image exists, and that a tag given beside the digest still
// names it. Tags are allowed to move (the digest is what runs), so a moved tag is a warning.
func (g *Gate) checkContainer(ctx context.Context, c *Check, ct catalog.ContainerRuntime, at string) {
	img, err := catalog.ParseImage(ct.Image)
	if err != nil {
		c.Skipped = SkippedUnpinned // validation reported it
		return
	}
	pinned := img.Digest
	if pinned == "" && ct.SHA256 != "" {
		pinned = "sha256:" + ct.SHA256
	}
	if pinned == "" {
		c.Skipped = SkippedUnpinned // validation reported the missing pin
		return
	}
	if !hasRegistryHost(img.Name) {
		c.add(catalog.SeverityWarning, c.Pointer, "image %q names no registry host, so it cannot be checked", ct.Image)
		c.Skipped = SkippedNoRegistry
		return
	}
	ref := img.Name + "@" + pinned
	c.Reference = ref
	desc, err := g.client.Head(ctx, ref)
	if err != nil {
		c.add(catalog.SeverityError, c.Pointer, "image %s: %v", ref, err)
		return
	}
	c.Digest = desc.Digest.String()
	if img.Tag != "" {
		tagged, err := g.client.Head(ctx, img.Name+":"+img.Tag)
		switch {
		case err != nil:
			c.add(catalog.SeverityWarning, c.Pointer, "image %s:%s: %v (the pinned digest exists)", img.Name, img.Tag, err)
		case tagged.Digest.String() != pinned:
			c.add(catalog.SeverityWarning, at+"/sha256", "tag %s of %s now names %s, not the recorded %s", img.Tag, img.Name, tagged.Digest, pinned)
		}
	}
	g.checkSignature(ctx, c, ref)
}

// checkRuntimeArtifact checks an exec or starlark artifact: it resolves (which checks the
// manifests' digests, including a pinned root digest), is of the expected kind, its file's digest
// is the sha256 the document records, and the registry has that blob.
func (g *Gate) checkRuntimeArtifact(ctx context.Context, c *Check, ref string, platform *ocispec.Platform, kind oci.Kind, sha256, shaPointer string) {
	a, err := g.resolve(ctx, ref, platform)
	if err != nil {
		c.add(catalog.SeverityError, c.Pointer, "%v", err)
		return
	}
	c.Digest = a.Root.Digest.String()
	if a.Kind != kind {
		c.add(catalog.SeverityError, c.Pointer, "%s is %s artifact, not %s artifact", ref, withArticle(a.Kind), withArticle(kind))
		return
	}
	if len(a.Layers) != 1 {
		c.add(catalog.SeverityError, c.Pointer, "%s holds %d files; a %s artifact holds one", ref, len(a.Layers), kind)
		return
	}
	layer := a.Layers[0]
	if sha256 != "" && layer.Digest != digest.NewDigestFromEncoded(digest.SHA256, sha256) {
		c.add(catalog.SeverityError, shaPointer, "the document records sha256 %s, but %s holds %s", sha256, a.Reference, layer.Digest)
		return
	}
	ok, err := g.client.BlobExists(ctx, a, layer)
	switch {
	case err != nil:
		c.add(catalog.SeverityError, c.Pointer, "%s: blob %s: %v", a.Reference, layer.Digest, err)
		return
	case !ok:
		c.add(catalog.SeverityError, c.Pointer, "%s: the registry does not have blob %s", a.Reference, layer.Digest)
		return
	}
	g.checkSignature(ctx, c, a.Reference.String())
}

// hasRegistryHost applies docker's rule: the first path element names a registry when it has a
// dot or a port, or is localhost. krm-catalog assumes no default registry.
func hasRegistryHost(name string) bool {
	first, _, found := strings.Cut(name, "/")
	return found && (strings.ContainsAny(first, ".:") || first == "localhost")
}

func (g *Gate) resolve(ctx context.Context, ref string, platform *ocispec.Platform) (oci.Artifact, error) {
	key := ref
	if platform != nil {
		key += "#" + oci.PlatformString(*platform)
	}
	if r, ok := g.resolved[key]; ok {
		return r.artifact, r.err
	}
	a, err := g.client.Resolve(ctx, ref, platform)
	g.resolved[key] = resolution{a, err}
	return a, err
}

// checkSignature checks ref's signature when there are trusted keys: an error when signatures are
// required, a warning otherwise.
func (g *Gate) checkSignature(ctx context.Context, c *Check, ref string) {
	trust := g.opts.trust()
	if trust.IsZero() {
		return
	}
	err, seen := g.signed[ref]
	if !seen {
		var sig oci.Signature
		sig, err = g.client.VerifySignaturesWith(ctx, ref, trust)
		if err == nil {
			c.Signed = sig.SignedBy()
		}
		g.signed[ref] = err
	}
	if err == nil {
		return
	}
	sev := catalog.SeverityWarning
	if g.opts.RequireSignatures {
		sev = catalog.SeverityError
	}
	switch {
	case errors.Is(err, oci.ErrNoSignature), errors.Is(err, oci.ErrUntrustedSignature), errors.Is(err, oci.ErrSignatureForOtherDigest):
		c.add(sev, c.Pointer, "%v", err)
	default:
		c.add(catalog.SeverityError, c.Pointer, "checking the signature: %v", err)
	}
}

// fetchURL reads a catalog over https, or plain http from this machine (the rule registries
// follow), at most the size validation accepts.
func (g *Gate) fetchURL(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", url, err)
	}
	if !loopback.Secure(req.URL) {
		return nil, fmt.Errorf("fetch %s: plain http is refused beyond this machine; use https:// or oci://", url)
	}
	req.Header.Set("Accept", "application/yaml, application/json;q=0.9, */*;q=0.1")
	resp, err := g.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, catalog.MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", url, err)
	}
	if len(data) > catalog.MaxInputBytes {
		return nil, fmt.Errorf("fetch %s: larger than the %d-byte limit", url, catalog.MaxInputBytes)
	}
	return data, nil
}

func withArticle(k oci.Kind) string {
	if k == oci.KindExec {
		return "an exec"
	}
	return "a " + string(k)
}

// Package fnoci adapts the oci package to the small interfaces the resolver and the function runtimes
// define: oci:// catalogs, starlark scripts and exec binaries, signature-checked when keys are given.
package fnoci

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// Adapter fetches krm-catalog artifacts through an oci.Client. With Trust, a catalog must carry a
// signature by one of its keys or identities (checked on the pinned digest, so a moving tag cannot slip in between).
// Runtime artifacts are not required to be signed: the signed catalog pins their digests, and those
// are checked.
type Adapter struct {
	Client *oci.Client
	// Trust says whose signatures count: keys and keyless identities.
	Trust sign.Trust
}

// resolve pins ref to the digest it names now and checks the artifact kind and, with keys and
// verify, its signature.
func (a *Adapter) resolve(ctx context.Context, ref string, kind oci.Kind, platform *ocispec.Platform, verify bool) (oci.Artifact, string, error) {
	art, err := a.Client.Resolve(ctx, ref, platform)
	if err != nil {
		return oci.Artifact{}, "", err
	}
	if art.Kind != kind {
		return oci.Artifact{}, "", fmt.Errorf("%s is a %s artifact, not a %s", ref, art.Kind, kind)
	}
	pinned := art.Reference.String()
	if verify && !a.Trust.IsZero() {
		if _, err := a.Client.VerifySignaturesWith(ctx, pinned, a.Trust); err != nil {
			return oci.Artifact{}, "", err
		}
	}
	return art, pinned, nil
}

// PullCatalog implements resolver.CatalogPuller.
func (a *Adapter) PullCatalog(ctx context.Context, ref string) ([]byte, error) {
	_, pinned, err := a.resolve(ctx, ref, oci.KindCatalog, nil, true)
	if err != nil {
		return nil, err
	}
	_, data, err := a.Client.Read(ctx, pinned, catalog.MaxInputBytes)
	return data, err
}

// FetchStarlark implements runner.ArtifactFetcher.
func (a *Adapter) FetchStarlark(ctx context.Context, ref string) (io.ReadCloser, error) {
	_, pinned, err := a.resolve(ctx, ref, oci.KindStarlark, nil, false)
	if err != nil {
		return nil, err
	}
	_, data, err := a.Client.Read(ctx, pinned, 4<<20)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// FetchExec implements exec.ArtifactFetcher. The layer's digest is compared with the catalog's
// sha256 before a byte of it is downloaded; the oci client checks the bytes against the layer
// digest as they stream; the caller checks them once more against the catalog.
func (a *Adapter) FetchExec(ctx context.Context, ref string, p catalog.ExecPlatform) (io.ReadCloser, error) {
	platform := &ocispec.Platform{OS: p.OS, Architecture: p.Arch}
	art, pinned, err := a.resolve(ctx, ref, oci.KindExec, platform, false)
	if err != nil {
		return nil, err
	}
	if len(art.Layers) != 1 {
		return nil, fmt.Errorf("%s: the %s/%s manifest has %d files, expected one executable", ref, p.OS, p.Arch, len(art.Layers))
	}
	want := "sha256:" + strings.TrimPrefix(p.SHA256, "sha256:")
	if got := art.Layers[0].Digest.String(); got != want {
		return nil, fmt.Errorf("%w: %s for %s/%s is %s, the catalog pins %s; nothing was downloaded", fn.ErrDigestMismatch, ref, p.OS, p.Arch, got, want)
	}
	dir, err := os.MkdirTemp("", "krm-catalog-exec-*")
	if err != nil {
		return nil, err
	}
	res, err := a.Client.Pull(ctx, pinned, oci.PullOptions{Dir: dir, Platform: platform})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, filepath.Base(res.Files[0].Title)))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &tempFile{File: f, dir: dir}, nil
}

// tempFile removes its directory when closed.
type tempFile struct {
	*os.File
	dir string
}

func (t *tempFile) Close() error {
	err := t.File.Close()
	os.RemoveAll(t.dir)
	return err
}

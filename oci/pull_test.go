package oci_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

func platform(t *testing.T, s string) *ocispec.Platform {
	t.Helper()
	p, err := oci.ParsePlatform(s)
	if err != nil {
		t.Fatal(err)
	}
	return &p
}

func pushExec(t *testing.T, c *oci.Client, ref string, platforms ...string) oci.PushResult {
	t.Helper()
	var files []oci.File
	for _, p := range platforms {
		files = append(files, oci.File{Path: writeFile(t, "fn", "binary for "+p), Platform: platform(t, p)})
	}
	res, err := c.Push(context.Background(), ref, oci.PushOptions{Kind: oci.KindExec, Files: files, Created: fixedTime})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestExecPlatforms(t *testing.T) {
	t.Parallel()
	current := runtime.GOOS + "/" + runtime.GOARCH
	for _, reg := range registrytest.Both(t) {
		t.Run(reg.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ref := reg.Host + "/exec:v1"
			pushExec(t, newClient(t), ref, "linux/arm64", "darwin/arm64", current, "linux/arm/v7")

			var idx ocispec.Index
			fetchJSON(t, ref, &idx)
			if idx.MediaType != ocispec.MediaTypeImageIndex || idx.ArtifactType != oci.MediaTypeExec {
				t.Errorf("index media type %s, artifactType %s", idx.MediaType, idx.ArtifactType)
			}
			var got []string
			for _, m := range idx.Manifests {
				if _, titled := m.Annotations[ocispec.AnnotationTitle]; titled {
					t.Errorf("index entry %s has a title: oras pull would write the manifest as a file", m.Digest)
				}
				if m.Platform == nil || m.ArtifactType != oci.MediaTypeExec {
					t.Errorf("index entry %s: platform %v, artifactType %q", m.Digest, m.Platform, m.ArtifactType)
					continue
				}
				got = append(got, oci.PlatformString(*m.Platform))
			}
			if len(got) != 4 {
				t.Errorf("index platforms %v, want 4", got)
			}

			tests := []struct {
				name     string
				platform *ocispec.Platform
				want     string
				wantErr  error
			}{
				{"running platform by default", nil, "binary for " + current, nil},
				{"override", platform(t, "darwin/arm64"), "binary for darwin/arm64", nil},
				{"variant", platform(t, "linux/arm/v7"), "binary for linux/arm/v7", nil},
				{"missing platform", platform(t, "plan9/386"), "", oci.ErrNoPlatform},
			}
			for _, tc := range tests {
				dir := t.TempDir()
				res, err := newClient(t).Pull(ctx, ref, oci.PullOptions{Dir: dir, Platform: tc.platform})
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("%s: err = %v, want %v", tc.name, err, tc.wantErr)
				}
				if tc.wantErr != nil {
					if !strings.Contains(err.Error(), "linux/arm64") {
						t.Errorf("%s: error %q does not list the platforms there are", tc.name, err)
					}
					continue
				}
				path := filepath.Join(dir, "fn")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != tc.want {
					t.Errorf("%s: pulled %q, want %q", tc.name, b, tc.want)
				}
				if fi, _ := os.Stat(path); fi.Mode().Perm()&0o100 == 0 {
					t.Errorf("%s: %s mode %v is not executable", tc.name, path, fi.Mode())
				}
				if res.Kind != oci.KindExec || res.Manifest.Digest == res.Root.Digest {
					t.Errorf("%s: kind %s, manifest %s, root %s", tc.name, res.Kind, res.Manifest.Digest, res.Root.Digest)
				}
			}
		})
	}
}

// pushRaw pushes a manifest made by hand, for artifacts krm-catalog would not write itself.
func pushRaw(t *testing.T, ref, artifactType string, layers map[string]string, layerType string) {
	t.Helper()
	var list []rawLayer
	for title, data := range layers {
		list = append(list, rawLayer{title: title, data: data})
	}
	pushLayers(t, ref, artifactType, layerType, list...)
}

// rawLayer is a layer of a hand-made manifest; declared, when set, replaces the size its
// descriptor gives.
type rawLayer struct {
	title, data string
	declared    int64
}

func pushLayers(t *testing.T, ref, artifactType, layerType string, layers ...rawLayer) {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(ref)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	var descs []ocispec.Descriptor
	for _, l := range layers {
		d := content.NewDescriptorFromBytes(layerType, []byte(l.data))
		d.Annotations = map[string]string{ocispec.AnnotationTitle: l.title}
		if err := repo.Push(ctx, d, strings.NewReader(l.data)); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
		if l.declared != 0 {
			d.Size = l.declared
		}
		descs = append(descs, d)
	}
	m, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, artifactType, oras.PackManifestOptions{Layers: descs})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Tag(ctx, m, repo.Reference.Reference); err != nil {
		t.Fatal(err)
	}
}

func TestPullRefusesForeignArtifacts(t *testing.T) {
	t.Parallel()
	reg := registrytest.Distribution(t)
	tests := []struct {
		name, artifactType, layerType, title string
		want                                 error
		wantMsg                              string
	}{
		{"foreign artifactType", "application/vnd.example.sbom+json", "application/vnd.example.sbom+json", "sbom.json", oci.ErrUnsupportedMediaType, `"application/vnd.example.sbom+json"`},
		{"image layer under our artifactType", oci.MediaTypeCatalog, "application/vnd.oci.image.layer.v1.tar", "catalog.yaml", oci.ErrUnsupportedMediaType, `"application/vnd.oci.image.layer.v1.tar"`},
		{"title climbing out", oci.MediaTypeCatalog, oci.MediaTypeCatalog, "../escape.yaml", oci.ErrUnsafeTitle, `"../escape.yaml"`},
		{"absolute title", oci.MediaTypeCatalog, oci.MediaTypeCatalog, "/tmp/escape.yaml", oci.ErrUnsafeTitle, `"/tmp/escape.yaml"`},
		{"dotfile title", oci.MediaTypeCatalog, oci.MediaTypeCatalog, ".bashrc", oci.ErrUnsafeTitle, `".bashrc": a title must not start with a dot`},
		{"dotfile exec title", oci.MediaTypeCatalog, oci.MediaTypeCatalog, ".envrc", oci.ErrUnsafeTitle, `".envrc"`},
		{"control character in title", oci.MediaTypeCatalog, oci.MediaTypeCatalog, "catalog\n.yaml", oci.ErrUnsafeTitle, "control characters"},
		{"bidirectional override in title", oci.MediaTypeCatalog, oci.MediaTypeCatalog, "evil\u202elmay.sh", oci.ErrUnsafeTitle, "invisible format character U+202E"},
		{"zero-width space in title", oci.MediaTypeCatalog, oci.MediaTypeCatalog, "cata\u200blog.yaml", oci.ErrUnsafeTitle, "invisible format character U+200B"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ref := reg.Host + "/foreign:t" + string(rune('a'+i))
			pushRaw(t, ref, tc.artifactType, map[string]string{tc.title: "data"}, tc.layerType)
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			_, err := newClient(t).Pull(context.Background(), ref, oci.PullOptions{Dir: dir})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %v, want %v naming %s", err, tc.want, tc.wantMsg)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("a refused pull wrote %v", entries)
			}
		})
	}
}

func TestPullReadsOrasStyleArtifacts(t *testing.T) {
	t.Parallel()
	reg := registrytest.Distribution(t)
	// `oras push` without --artifact-type: artifactType application/vnd.unknown.artifact.v1, our
	// layer media type.
	ref := reg.Host + "/oras-style:v1"
	pushRaw(t, ref, "application/vnd.unknown.artifact.v1", map[string]string{"catalog.yaml": catalogYAML}, oci.MediaTypeCatalog)
	dir := t.TempDir()
	res, err := newClient(t).Pull(context.Background(), ref, oci.PullOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != oci.KindCatalog {
		t.Errorf("kind %s, want catalog", res.Kind)
	}
}

func TestTamperedContentIsRefused(t *testing.T) {
	t.Parallel()
	reg := registrytest.Distribution(t)
	ctx := context.Background()
	pushed, err := newClient(t).Push(ctx, reg.Host+"/tamper:v1", oci.PushOptions{
		Kind: oci.KindCatalog, Files: []oci.File{{Path: writeFile(t, "catalog.yaml", catalogYAML)}}, Created: fixedTime,
	})
	if err != nil {
		t.Fatal(err)
	}
	// A binary that streams through several buffers (streamVerified).
	bin := filepath.Join(t.TempDir(), "fn")
	if err := os.WriteFile(bin, randomBytes(t, 5<<20+123), 0o755); err != nil {
		t.Fatal(err)
	}
	pushedExec, err := newClient(t).Push(ctx, reg.Host+"/tamper-exec:v1", oci.PushOptions{
		Kind: oci.KindExec, Files: []oci.File{{Path: bin, Platform: platform(t, runtime.GOOS+"/"+runtime.GOARCH)}}, Created: fixedTime,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, part string
		byDigest   bool
		noCache    bool
		exec       bool
	}{
		{"blob", "/blobs/", false, false, false},
		{"blob without a cache", "/blobs/", false, true, false},
		{"manifest by tag", "/manifests/", false, false, false},
		{"manifest by digest", "/manifests/", true, false, false},
		{"5 MB exec blob", "/blobs/", false, false, true},
		{"5 MB exec blob without a cache", "/blobs/", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, digest := "/tamper", pushed.Descriptor.Digest.String()
			if tc.exec {
				repo, digest = "/tamper-exec", pushedExec.Descriptor.Digest.String()
			}
			proxy := registrytest.Tamper(t, reg, tc.part)
			ref := proxy + repo + ":v1"
			if tc.byDigest {
				ref = proxy + repo + "@" + digest
			}
			c := newClient(t)
			if tc.noCache {
				c = oci.NewClient(oci.Options{})
			}
			dir := t.TempDir()
			_, err := c.Pull(ctx, ref, oci.PullOptions{Dir: dir})
			t.Logf("refused: %v", err)
			var dm *oci.DigestMismatchError
			if !errors.Is(err, oci.ErrDigestMismatch) || !errors.As(err, &dm) {
				t.Fatalf("err = %v, want a digest mismatch", err)
			}
			if dm.Expected == "" || dm.Received == "" || dm.Expected == dm.Received ||
				!strings.Contains(err.Error(), dm.Expected.String()) || !strings.Contains(err.Error(), dm.Received.String()) {
				t.Errorf("error %q should name the expected and the received digest", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("a tampered pull left %v", entries)
			}
			// Nothing unverified is cached: neither the tampered bytes' digest nor the expected one
			// (which would name the tampered bytes) is in the cache, and no temporary file is left;
			// the same pull without the proxy still fetches (and gets) the right content.
			if c.Cache() != nil {
				for _, d := range []string{dm.Received.Encoded(), dm.Expected.Encoded()} {
					if blobs, _ := filepath.Glob(filepath.Join(c.Cache().Dir(), "blobs", "sha256", d)); len(blobs) != 0 {
						t.Errorf("the cache holds %s after a tampered pull", d)
					}
				}
				if left, _ := os.ReadDir(filepath.Join(c.Cache().Dir(), "ingest")); len(left) != 0 {
					t.Errorf("the tampered pull left %d files in the cache's ingest directory", len(left))
				}
			}
			res, err := c.Pull(ctx, reg.Host+repo+"@"+digest, oci.PullOptions{Dir: dir})
			if err != nil {
				t.Fatalf("pull from the honest registry after the tampered one: %v", err)
			}
			if tc.exec {
				got, _ := os.ReadFile(res.Files[0].Path)
				want, _ := os.ReadFile(bin)
				if !bytes.Equal(got, want) {
					t.Error("the pulled binary differs from the pushed one")
				}
			}
		})
	}
}

// A cached blob cut short (a crash before the kernel wrote it out: blobs are not synced) is not
// served: the pull fetches it again and repairs the cache.
func TestShortCachedBlobIsFetchedAgain(t *testing.T) {
	t.Parallel()
	reg := registrytest.Distribution(t)
	ctx := context.Background()
	c := newClient(t)
	d := pushExec(t, c, reg.Host+"/short:v1", runtime.GOOS+"/"+runtime.GOARCH).Descriptor.Digest
	ref := reg.Host + "/short@" + d.String()
	first, err := c.Pull(ctx, ref, oci.PullOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(c.Cache().Dir(), "blobs", "sha256", strings.TrimPrefix(first.Files[0].Digest, "sha256:"))
	if err := os.Chmod(blob, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(blob, first.Files[0].Size/2); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	second, err := c.Pull(ctx, ref, oci.PullOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if second.Cached {
		t.Error("the pull says it was served from a cut-short cache entry")
	}
	for _, p := range []string{blob, filepath.Join(dir, "fn")} {
		if fi, err := os.Stat(p); err != nil || fi.Size() != first.Files[0].Size {
			t.Errorf("%s: %v, size %v, want %d bytes", p, err, fi, first.Files[0].Size)
		}
	}
}

func TestCachedPullByDigestNeedsNoNetwork(t *testing.T) {
	t.Parallel()
	reg := registrytest.Distribution(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		push func(c *oci.Client, ref string) string
		file string
	}{
		{"catalog", func(c *oci.Client, ref string) string {
			res, err := c.Push(ctx, ref, oci.PushOptions{Kind: oci.KindCatalog, Files: []oci.File{{Path: writeFile(t, "catalog.yaml", catalogYAML)}}})
			if err != nil {
				t.Fatal(err)
			}
			return res.Descriptor.Digest.String()
		}, "catalog.yaml"},
		{"exec", func(c *oci.Client, ref string) string {
			return pushExec(t, c, ref, runtime.GOOS+"/"+runtime.GOARCH, "plan9/386").Descriptor.Digest.String()
		}, "fn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			count := &countingTransport{}
			cache, err := oci.OpenCache(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			c := oci.NewClient(oci.Options{Cache: cache, HTTPClient: &http.Client{Transport: count}})
			d := tc.push(c, reg.Host+"/cached-"+tc.name+":v1")
			ref := reg.Host + "/cached-" + tc.name + "@" + d
			first, err := c.Pull(ctx, ref, oci.PullOptions{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if first.Cached {
				t.Error("the first pull says it came from the cache")
			}
			before := count.n.Load()
			dir := t.TempDir()
			second, err := c.Pull(ctx, ref, oci.PullOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if n := count.n.Load() - before; n != 0 || !second.Cached {
				t.Errorf("cached pull by digest made %d requests (Cached=%v), want none", n, second.Cached)
			}
			if diff := cmp.Diff(first.Files[0].Digest, second.Files[0].Digest); diff != "" {
				t.Error(diff)
			}
			if _, err := os.Stat(filepath.Join(dir, tc.file)); err != nil {
				t.Error(err)
			}
			// A pull by tag must ask the registry: tags move.
			before = count.n.Load()
			if _, err := c.Pull(ctx, reg.Host+"/cached-"+tc.name+":v1", oci.PullOptions{Dir: dir}); err != nil {
				t.Fatal(err)
			}
			if count.n.Load() == before {
				t.Error("a pull by tag was served without asking the registry")
			}
		})
	}
}

// Two processes share a cache: each opened it before the other wrote, and neither may lose the
// other's index.json entries.
func TestSharedCacheKeepsEveryonesEntries(t *testing.T) {
	t.Parallel()
	reg := registrytest.Distribution(t)
	ctx := context.Background()
	dir := t.TempDir()
	var clients []*oci.Client
	for range 2 {
		cache, err := oci.OpenCache(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, oci.NewClient(oci.Options{Cache: cache}))
	}
	var want []string
	for i, c := range clients {
		ref := reg.Host + "/shared:v" + string(rune('1'+i))
		res, err := c.Push(ctx, ref, oci.PushOptions{Kind: oci.KindCatalog, Files: []oci.File{{Data: []byte(catalogYAML + strings.Repeat("#\n", i)), Title: "catalog.yaml"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Pull(ctx, ref, oci.PullOptions{Dir: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
		want = append(want, res.Descriptor.Digest.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range want {
		if !strings.Contains(string(raw), d) {
			t.Errorf("index.json lacks %s:\n%s", d, raw)
		}
	}
}

// A pull writes nothing for an artifact with two layers of one title (the last would win), or with
// layers larger than the pull may write; a layer that declares 50 GiB is refused before a byte of
// it is fetched, and a dotfile already in the directory is left as it was.
func TestPullRefusesDuplicateTitlesAndOversizedLayers(t *testing.T) {
	t.Parallel()
	reg := registrytest.Distribution(t)
	big := strings.Repeat("x", 2<<20)
	tests := []struct {
		name     string
		layers   []rawLayer
		maxBytes int64
		want     error
		wantMsg  string
	}{
		{"duplicate title", []rawLayer{{title: "catalog.yaml", data: "a: 1\n"}, {title: "catalog.yaml", data: "a: 2\n"}}, 0, oci.ErrUnsafeTitle, `"catalog.yaml": two layers have this title`},
		{"titles differing in case", []rawLayer{{title: "Catalog.yaml", data: "a: 1\n"}, {title: "catalog.yaml", data: "a: 2\n"}}, 0, oci.ErrUnsafeTitle, "two layers have this title"},
		{"over the cap", []rawLayer{{title: "catalog.yaml", data: big}}, 1 << 20, oci.ErrTooLarge, "declares 2097152 bytes: artifact too large: the pull may write 1048576 bytes (--max-size)"},
		{"together over the cap", []rawLayer{{title: "a.yaml", data: big[:600<<10]}, {title: "b.yaml", data: big[:600<<10] + "y"}}, 1 << 20, oci.ErrTooLarge, "(b.yaml) declares"},
		{"declares 50 GiB", []rawLayer{{title: "catalog.yaml", data: "a: 1\n", declared: 50 << 30}}, 0, oci.ErrTooLarge, "declares 53687091200 bytes"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ref := reg.Host + "/refused:t" + string(rune('a'+i))
			pushLayers(t, ref, oci.MediaTypeCatalog, oci.MediaTypeCatalog, tc.layers...)
			dir := t.TempDir()
			bashrc := filepath.Join(dir, ".bashrc")
			if err := os.WriteFile(bashrc, []byte("# mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			client, blobGets := countingClient(t)
			_, err := client.Pull(context.Background(), ref, oci.PullOptions{Dir: dir, MaxBytes: tc.maxBytes})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %v, want %v naming %s", err, tc.want, tc.wantMsg)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("a refused pull wrote %v", entries)
			}
			if n := blobGets(); n != 0 {
				t.Errorf("%d blob requests for a pull refused by its manifest", n)
			}
		})
	}
}

// countingClient is a client that counts the blob requests it makes.
func countingClient(t *testing.T) (*oci.Client, func() int) {
	t.Helper()
	ct := &countingTransport{}
	return oci.NewClient(oci.Options{HTTPClient: &http.Client{Transport: ct}}), func() int { return int(ct.blobs.Load()) }
}

package oci_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

// fetchJSON reads a manifest or index straight from the registry, bypassing our client.
func fetchJSON(t *testing.T, ref string, v any) {
	t.Helper()
	repo, err := remote.NewRepository(ref)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	_, rc, err := repo.FetchReference(context.Background(), repo.Reference.Reference)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := json.NewDecoder(rc).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func TestPushPullRoundTrip(t *testing.T) {
	t.Parallel()
	for _, reg := range registrytest.Both(t) {
		for _, tc := range []struct {
			kind      oci.Kind
			title     string
			content   string
			mediaType string
		}{
			{oci.KindCatalog, "catalog.yaml", catalogYAML, "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"},
			{oci.KindDefinition, "definition.yaml", definitionYAML, "application/vnd.cncf.kubernetes.krm-func-definition.layer.v1+yaml"},
			{oci.KindStarlark, "fn.star", "def run(r, fc):\n  pass\n", "application/vnd.cncf.kubernetes.krm-func-runtime-starlark.layer.v1"},
		} {
			t.Run(reg.Name+"/"+string(tc.kind), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				c := newClient(t)
				ref := reg.Host + "/fns/" + string(tc.kind) + ":v1.0.0"
				res, err := c.Push(ctx, ref, oci.PushOptions{
					Kind:    tc.kind,
					Files:   []oci.File{{Path: writeFile(t, tc.title, tc.content)}},
					Title:   "the-title",
					Version: "v1.0.0",
					Source:  "https://git.example.com/fns",
					Created: fixedTime,
				})
				if err != nil {
					t.Fatal(err)
				}
				var m ocispec.Manifest
				fetchJSON(t, ref, &m)
				if diff := cmp.Diff(tc.mediaType, m.ArtifactType); diff != "" {
					t.Errorf("artifactType (-want +got):\n%s", diff)
				}
				if len(m.Layers) != 1 || m.Layers[0].MediaType != tc.mediaType || m.Layers[0].Annotations[ocispec.AnnotationTitle] != tc.title {
					t.Errorf("layers = %+v, want one %s titled %s", m.Layers, tc.mediaType, tc.title)
				}
				if m.Config.MediaType != ocispec.MediaTypeEmptyJSON {
					t.Errorf("config media type %s, want the empty config", m.Config.MediaType)
				}
				wantAnn := map[string]string{
					ocispec.AnnotationTitle:   "the-title",
					ocispec.AnnotationVersion: "v1.0.0",
					ocispec.AnnotationCreated: "2026-01-02T03:04:05Z",
					ocispec.AnnotationSource:  "https://git.example.com/fns",
				}
				if diff := cmp.Diff(wantAnn, m.Annotations); diff != "" {
					t.Errorf("manifest annotations (-want +got):\n%s", diff)
				}

				dir := t.TempDir()
				got, err := newClient(t).Pull(ctx, ref, oci.PullOptions{Dir: dir})
				if err != nil {
					t.Fatal(err)
				}
				if got.Root.Digest != res.Descriptor.Digest || got.Kind != tc.kind {
					t.Errorf("pulled %s %s, want %s %s", got.Kind, got.Root.Digest, tc.kind, res.Descriptor.Digest)
				}
				b, err := os.ReadFile(filepath.Join(dir, tc.title))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.content, string(b)); diff != "" {
					t.Errorf("pulled content (-want +got):\n%s", diff)
				}
				if fi, _ := os.Stat(filepath.Join(dir, tc.title)); fi.Mode().Perm()&0o111 != 0 {
					t.Errorf("%s is executable (%v); only exec binaries should be", tc.title, fi.Mode())
				}
			})
		}
	}
}

func TestPushReproducible(t *testing.T) {
	t.Parallel()
	reg := registrytest.Distribution(t)
	ctx := context.Background()
	c := newClient(t)
	file := writeFile(t, "catalog.yaml", catalogYAML)
	push := func(tag string, opts oci.PushOptions) string {
		opts.Kind, opts.Files = oci.KindCatalog, []oci.File{{Path: file}}
		res, err := c.Push(ctx, reg.Host+"/repro:"+tag, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res.Descriptor.Digest.String()
	}
	a := push("a", oci.PushOptions{Created: fixedTime})
	b := push("b", oci.PushOptions{Created: fixedTime})
	if a != b {
		t.Errorf("same input and created time gave %s and %s", a, b)
	}
	if c := push("c", oci.PushOptions{Created: fixedTime.Add(1e9)}); c == a {
		t.Errorf("a different created time gave the same digest %s: created is not in the manifest", c)
	}
}

func TestPushRefusals(t *testing.T) {
	t.Parallel()
	reg := registrytest.Distribution(t)
	c := newClient(t)
	file := writeFile(t, "catalog.yaml", catalogYAML)
	tests := []struct {
		name string
		ref  string
		opts oci.PushOptions
		want error
	}{
		{"digest reference", reg.Host + "/x@sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120", oci.PushOptions{Kind: oci.KindCatalog, Files: []oci.File{{Path: file}}}, oci.ErrInvalidReference},
		{"no registry host", "catalog:v1", oci.PushOptions{Kind: oci.KindCatalog, Files: []oci.File{{Path: file}}}, oci.ErrInvalidReference},
		{"title with a directory", reg.Host + "/x:v1", oci.PushOptions{Kind: oci.KindCatalog, Files: []oci.File{{Path: file, Title: "../catalog.yaml"}}}, oci.ErrUnsafeTitle},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := c.Push(context.Background(), tc.ref, tc.opts)
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// requestLog records the requests a client makes, as "METHOD what", what being the kind of path:
// blob, upload or manifest.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	what := "other"
	switch p := r.URL.Path; {
	case strings.Contains(p, "/blobs/uploads/"):
		what = "upload"
	case strings.Contains(p, "/blobs/"):
		what = "blob"
	case strings.Contains(p, "/manifests/"):
		what = "manifest"
	}
	l.mu.Lock()
	l.reqs = append(l.reqs, r.Method+" "+what)
	l.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// take returns the requests made since the last call, sorted: some are made concurrently.
func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.reqs
	l.reqs = nil
	slices.Sort(r)
	return r
}

// A push asks about each blob once, the empty config included (it is shared by every manifest),
// and uploads only what the registry lacks.
func TestPushRequests(t *testing.T) {
	t.Parallel()
	repeat := func(s string, n int) []string { return slices.Repeat([]string{s}, n) }
	for _, reg := range registrytest.Both(t) {
		t.Run(reg.Name, func(t *testing.T) {
			t.Parallel()
			log := &requestLog{}
			c := oci.NewClient(oci.Options{HTTPClient: &http.Client{Transport: log}})
			opts := oci.PushOptions{Kind: oci.KindExec, Files: []oci.File{
				{Path: writeFile(t, "fn", "arm64 binary"), Platform: platform(t, "linux/arm64")},
				{Path: writeFile(t, "fn", "amd64 binary"), Platform: platform(t, "linux/amd64")},
			}}
			for _, step := range []struct {
				name string
				want []string
			}{
				// Config and two binaries: HEAD, POST, PUT each; two manifests and the index.
				{"first push", slices.Concat(repeat("HEAD blob", 3), repeat("POST upload", 3), repeat("PUT manifest", 3), repeat("PUT upload", 3))},
				// The registry has every blob: nothing is uploaded.
				{"same content again", slices.Concat(repeat("HEAD blob", 3), repeat("PUT manifest", 3))},
			} {
				if _, err := c.Push(context.Background(), reg.Host+"/requests:v1", opts); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				if diff := cmp.Diff(step.want, log.take()); diff != "" {
					t.Errorf("%s: requests (-want +got):\n%s", step.name, diff)
				}
			}
		})
	}
}

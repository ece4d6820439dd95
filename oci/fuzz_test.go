package oci_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/krm-catalog/krm-catalog/oci"
)

// FuzzParseReference: references come from users and from catalogs (oci:// URIs).
func FuzzParseReference(f *testing.F) {
	for _, s := range []string{
		"registry.example.com/catalogs/platform:v1.4.0",
		"oci://registry.example.com/fns/set-ns-exec@sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120",
		"127.0.0.1:5000/a/b:tag@sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120",
		"[::1]:5000/repo:v1",
		"localhost/repo",
		"alpine",
		"registry.example.com/UPPER:tag",
		"registry.example.com/repo@sha256:short",
		"",
		"oci://",
		"a/b:c:d",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := oci.ParseReference(s)
		if err != nil {
			if !errors.Is(err, oci.ErrInvalidReference) {
				t.Fatalf("error %v is not ErrInvalidReference", err)
			}
			return
		}
		if r.Registry == "" || r.Repository == "" {
			t.Fatalf("%q parsed without registry or repository: %+v", s, r)
		}
		// What we print must parse back to the same reference.
		again, err := oci.ParseReference(r.String())
		if err != nil || again != r {
			t.Fatalf("%q -> %q -> %+v, %v; want %+v", s, r.String(), again, err, r)
		}
	})
}

// FuzzArtifactKind: manifests come from registries.
func FuzzArtifactKind(f *testing.F) {
	seed := func(m ocispec.Manifest) {
		b, _ := json.Marshal(m)
		f.Add(b)
	}
	layer := func(mt, title string) ocispec.Descriptor {
		return ocispec.Descriptor{MediaType: mt, Digest: "sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120", Size: 3, Annotations: map[string]string{ocispec.AnnotationTitle: title}}
	}
	seed(ocispec.Manifest{ArtifactType: oci.MediaTypeCatalog, Layers: []ocispec.Descriptor{layer(oci.MediaTypeCatalog, "catalog.yaml")}})
	seed(ocispec.Manifest{Config: ocispec.Descriptor{MediaType: oci.MediaTypeExec}, Layers: []ocispec.Descriptor{layer(oci.MediaTypeExec, "fn")}})
	seed(ocispec.Manifest{ArtifactType: "application/vnd.example", Layers: []ocispec.Descriptor{layer("application/vnd.oci.image.layer.v1.tar", "x")}})
	seed(ocispec.Manifest{ArtifactType: oci.MediaTypeStarlark})
	f.Add([]byte(`{"layers": null}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m ocispec.Manifest
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		kind, err := oci.ArtifactKind(m)
		if err != nil {
			return
		}
		// Accepting a manifest means every layer is of the kind's media type.
		for _, l := range m.Layers {
			if l.MediaType != kind.MediaType() {
				t.Fatalf("accepted %s with a %s layer", kind, l.MediaType)
			}
		}
		if len(m.Layers) == 0 {
			t.Fatal("accepted an artifact without layers")
		}
	})
}

// FuzzParsePlatform: platforms come from flags and registries.
func FuzzParsePlatform(f *testing.F) {
	for _, s := range []string{"linux/amd64", "linux/arm/v7", "darwin/arm64", "linux", "a/b/c/d", "/amd64", "linux/amd64=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := oci.ParsePlatform(s)
		if err != nil {
			return
		}
		if got := oci.PlatformString(p); got != s {
			t.Fatalf("%q -> %q", s, got)
		}
		if strings.Contains(p.OS+p.Architecture+p.Variant, "/") {
			t.Fatalf("%q: a part holds a slash: %+v", s, p)
		}
	})
}

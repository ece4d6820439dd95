package resolver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestResolveImage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	trusted := writeFile(t, dir, "trusted.yaml", `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: trusted
spec:
  krmFunctions:
  - group: fn.example.com
    names:
      kind: SetNamespace
    description: test
    publisher: example.com
    versions:
    - name: v1
      runtime:
        container:
          image: registry.example.com/fns/set-namespace:v1.0.0@`+digest+`
    - name: v2
      runtime:
        container:
          image: registry.example.com/fns/set-namespace:v2.0.0
          sha256: "2222222222222222222222222222222222222222222222222222222222222222"
`)
	untrusted := writeFile(t, dir, "untrusted.yaml", catalogYAML("untrusted", fnEntry{"fn.example.com", "Other", "fns/other", []string{"v1"}}))
	r, err := New(Options{Catalogs: []string{untrusted, trusted}, Trusted: []string{trusted}, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		image, want string // want: the version found, "" for ErrNotFound
	}{
		{"registry.example.com/fns/set-namespace:v1.0.0", "v1"},
		{"registry.example.com/fns/set-namespace@" + digest, "v1"},
		{"registry.example.com/fns/set-namespace:v1.0.0@" + digest, "v1"},
		{"registry.example.com/fns/set-namespace:v2.0.0", "v2"},
		{"registry.example.com/fns/set-namespace@sha256:2222222222222222222222222222222222222222222222222222222222222222", "v2"},
		{"registry.example.com/fns/set-namespace:v3.0.0", ""},
		{"registry.example.com/fns/set-namespace", ""},                                                                         // latest
		{"other.example.com/fns/set-namespace:v1.0.0", ""},                                                                     // another registry
		{"registry.example.com/fns/set-namespace@sha256:3333333333333333333333333333333333333333333333333333333333333333", ""}, // another digest
		{"registry.example.com/fns/other@" + digestOf("fns/otherv1"), ""},                                                      // only an untrusted catalog lists it
	}
	for _, tc := range tests {
		res, err := r.ResolveImage(context.Background(), tc.image, "")
		switch {
		case tc.want == "" && !errors.Is(err, ErrNotFound):
			t.Errorf("%s: %v, %v; want ErrNotFound", tc.image, res, err)
		case tc.want != "" && err != nil:
			t.Errorf("%s: %v", tc.image, err)
		case tc.want != "" && (res.Version.Name != tc.want || res.Kind != "SetNamespace" || res.Catalog != trusted):
			t.Errorf("%s: %s %s %s from %s, want %s", tc.image, res.APIVersion, res.Kind, res.Version.Name, res.Catalog, tc.want)
		}
	}
	// with a runtime kind, only versions that offer it match
	if res, err := r.ResolveImage(context.Background(), "registry.example.com/fns/set-namespace:v1.0.0", "container"); err != nil || res.Version.Name != "v1" {
		t.Errorf("kind container: %v, %v", res, err)
	}
	if _, err := r.ResolveImage(context.Background(), "registry.example.com/fns/set-namespace:v1.0.0", "exec"); !errors.Is(err, ErrNotFound) {
		t.Errorf("kind exec of a container-only version: %v, want ErrNotFound", err)
	}
	// an image not found says what was searched, what was passed over, and the tags listed
	_, err = r.ResolveImage(context.Background(), "registry.example.com/fns/set-namespace:v3.0.0", "")
	for _, s := range []string{"searched 1 catalog(s): " + trusted, "not searched, untrusted (--trusted-catalog trusts them): " + untrusted, trusted + " lists it at v1.0.0; " + trusted + " lists it at v2.0.0"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("not found: %v; want it to say %q", err, s)
		}
	}
	if _, err := r.ResolveImage(context.Background(), "Not An Image", ""); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("a malformed image: %v, want a parse error", err)
	}
}

// digestOf is the digest catalogYAML pins for a marker and version.
func digestOf(markerAndVersion string) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(markerAndVersion)))
}

package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

func decode(t *testing.T, text string) *catalog.Catalog {
	_, c := catalogtest.Decode(t, []byte(text))
	return c
}

const header = `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: Platform
spec:
  krmFunctions:
  - group: fn.example.com
    names: {kind: F}
    versions:
    - name: v1
      runtime:
`

// TestPlanRefusesUnpinned: what cannot be mirrored as the same bytes is refused before anything is
// copied, naming the function, version and runtime.
func TestPlanRefusesUnpinned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, runtime, want string
	}{
		{"container without digest", "        container: {image: registry.example.com/f:v1}", "fn.example.com/F v1 container registry.example.com/f:v1: runtime not pinned"},
		{"https exec without sha256", "        exec: {platforms: [{os: linux, arch: amd64, uri: 'https://example.com/f'}]}", "fn.example.com/F v1 exec linux/amd64 https://example.com/f: runtime not pinned"},
		{"https starlark without sha256", "        starlark: https://example.com/f.star", "fn.example.com/F v1 starlark https://example.com/f.star: runtime not pinned"},
		{"oci starlark by tag without sha256", "        starlark: {ref: registry.example.com/f:v1}", "runtime not pinned"},
		{"exec from elsewhere", "        exec: {platforms: [{os: linux, arch: amd64, uri: 'ftp://example.com/f', sha256: 'aa'}]}", `"ftp://example.com/f" is neither oci:// nor https://`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text := header + tt.runtime + "\n"
			_, err := Mirror(context.Background(), []byte(text), decode(t, text), Options{Client: oci.NewClient(oci.Options{}), Prefix: "127.0.0.1:1/m"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(tt.want, "not pinned") && !errors.Is(err, ErrUnpinned) {
				t.Errorf("error %v is not ErrUnpinned", err)
			}
		})
	}
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestMirrorRewritesOnlyTheRuntimes mirrors a catalog whose runtimes take every form (an image
// pinned in its name and one pinned by the sha256 field, shared between functions; an exec
// artifact by tag; https executables for two platforms; a starlark string) and compares the
// rewritten catalog with what it must be: comments and everything else kept.
func TestMirrorRewritesOnlyTheRuntimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, dst := registrytest.Distribution(t), registrytest.WithReferrers(t)
	client := oci.NewClient(oci.Options{})
	img := registrytest.PushImage(t, src.Host+"/fns/img:v1", "")
	amd, arm, script := []byte("amd64 binary"), []byte("arm64 binary"), []byte("# starlark\n")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(map[string][]byte{"/amd": amd, "/arm": arm, "/s.star": script}[r.URL.Path])
	}))
	t.Cleanup(srv.Close)
	_, err := client.Push(ctx, src.Host+"/fns/exe:v2", oci.PushOptions{Kind: oci.KindExec, Files: []oci.File{{Data: amd, Title: "f", Platform: &ocispec.Platform{OS: "linux", Architecture: "amd64"}}}})
	if err != nil {
		t.Fatal(err)
	}
	star, err := client.Push(ctx, src.Host+"/fns/star:v1", oci.PushOptions{Kind: oci.KindStarlark, Files: []oci.File{{Data: script, Title: "s.star"}}})
	if err != nil {
		t.Fatal(err)
	}
	const tmpl = `# the platform's catalog
apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: platform
spec:
  krmFunctions:
  - group: fn.example.com
    names: {kind: A}
    description: d
    publisher: example.com
    versions:
    - name: v1
      runtime:
        container:
          image: %[1]s # pinned in the name
        exec:
          platforms:
          - {bin: f, os: linux, arch: amd64, uri: 'oci://%[2]s', sha256: '%[3]s'}
    - name: v2
      runtime:
        container:
          image: %[4]s
          sha256: %[5]s
        exec:
          platforms:
          - bin: f
            os: linux
            arch: amd64
            uri: %[6]s/amd
            sha256: '%[3]s'
          - bin: f
            os: linux
            arch: arm64
            uri: %[6]s/arm
            sha256: '%[7]s'
  - group: fn.example.com
    names: {kind: B}
    description: d
    publisher: example.com
    versions:
    - name: v1
      runtime:
        starlark: {uri: '%[6]s/s.star', sha256: '%[8]s'}
    - name: v2
      runtime:
        starlark: oci://%[9]s
`
	in := fmt.Sprintf(tmpl, src.Host+"/fns/img:v1@"+img.String(), src.Host+"/fns/exe:v2", sum(amd),
		src.Host+"/fns/img:v1", img.Encoded(), srv.URL, sum(arm), sum(script), star.Reference.String())
	o := Options{Client: client, HTTP: srv.Client(), Prefix: dst.Host + "/m", Tag: "v9"}

	dry := o
	dry.DryRun = true
	plan, err := Mirror(ctx, []byte(in), decode(t, in), dry)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, s := range plan.Steps {
		actions = append(actions, s.Action+" "+strings.Join(s.Subjects, ", "))
	}
	wantPlan := []string{
		"copy fn.example.com/A v1 container, fn.example.com/A v2 container",
		"copy fn.example.com/A v1 exec linux/amd64",
		"download fn.example.com/A v2 exec linux/amd64, fn.example.com/A v2 exec linux/arm64",
		"download fn.example.com/B v1 starlark",
		"copy fn.example.com/B v2 starlark",
		"push-catalog ",
	}
	if d := cmp.Diff(wantPlan, actions); d != "" || plan.Catalog != "" {
		t.Errorf("plan (-want +got):\n%s", d)
	}
	if _, found, _ := client.Exists(ctx, dst.Host+"/m/fns/img:v1"); found {
		t.Error("the dry run copied the image")
	}

	res, err := Mirror(ctx, []byte(in), decode(t, in), o)
	if err != nil {
		t.Fatal(err)
	}
	execIndex, _, _ := client.Exists(ctx, dst.Host+"/m/functions/fn.example.com/a:v2-exec")
	starArt, _, _ := client.Exists(ctx, dst.Host+"/m/functions/fn.example.com/b:v1-starlark")
	exeDesc, _, _ := client.Exists(ctx, src.Host+"/fns/exe:v2")
	want := fmt.Sprintf(tmpl, dst.Host+"/m/fns/img:v1@"+img.String(), dst.Host+"/m/fns/exe:v2@"+exeDesc.Digest.String(), sum(amd),
		dst.Host+"/m/fns/img:v1", img.Encoded(), "%[6]s", sum(arm), sum(script), dst.Host+"/m/fns/star:v1@"+star.Descriptor.Digest.String())
	want = strings.Replace(want, "uri: %[6]s/amd", "uri: oci://"+dst.Host+"/m/functions/fn.example.com/a:v2-exec@"+execIndex.Digest.String(), 1)
	want = strings.Replace(want, "uri: %[6]s/arm", "uri: oci://"+dst.Host+"/m/functions/fn.example.com/a:v2-exec@"+execIndex.Digest.String(), 1)
	want = strings.Replace(want, "starlark: {uri: '%[6]s/s.star', sha256: '"+sum(script)+"'}",
		"starlark: {sha256: '"+sum(script)+"', ref: '"+dst.Host+"/m/functions/fn.example.com/b:v1-starlark@"+starArt.Digest.String()+"'}", 1)
	if d := cmp.Diff(want, string(res.Data)); d != "" {
		t.Errorf("mirrored catalog (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(res.Catalog, "oci://"+dst.Host+"/m/catalogs/platform:v9@sha256:") {
		t.Errorf("catalog reference %q", res.Catalog)
	}
	// the mirrored catalog is valid and pins what the source pinned
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	if _, findings := v.Validate("mirrored.yaml", res.Data, catalog.Options{}); findings.HasErrors() {
		t.Errorf("the mirrored catalog does not validate: %v", findings)
	}
	again, err := Mirror(ctx, []byte(in), decode(t, in), o)
	if err != nil || again.Copied() != 0 || again.Catalog != res.Catalog {
		t.Errorf("second run: %v, %d sent, %s (first %s)", err, again.Copied(), again.Catalog, res.Catalog)
	}
}

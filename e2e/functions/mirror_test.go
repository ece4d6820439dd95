package functions

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/krm-catalog/krm-catalog/examples/fnexamples"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// mirrorCatalog names an exec function over https, an exec function and a container image in the
// source registry, and a starlark script over https.
const mirrorCatalog = `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: platform
spec:
  krmFunctions:
  - group: fn.example.com
    names: {kind: SetNamespace}
    description: Sets the namespace; an executable over https.
    publisher: example.com
    versions:
    - name: v1
      runtime:
        exec:
          platforms:
          - {bin: set-namespace, os: %[1]s, arch: %[2]s, uri: '%[3]s', sha256: '%[4]s'}
  - group: fn.example.com
    names: {kind: SetLabels}
    description: Adds labels; an exec artifact and an image in the source registry.
    publisher: example.com
    versions:
    - name: v1
      runtime:
        container:
          image: %[5]s
        exec:
          platforms:
          - {bin: set-labels, os: %[1]s, arch: %[2]s, uri: 'oci://%[6]s', sha256: '%[7]s'}
  - group: fn.example.com
    names: {kind: SetAnnotations}
    description: Adds annotations; a starlark script over https.
    publisher: example.com
    versions:
    - name: v1
      runtime:
        starlark:
          uri: '%[8]s'
          sha256: '%[9]s'
`

// TestMirror mirrors a signed oci:// catalog from one registry (and an https server) to another,
// checks that a second run copies nothing and that a failed run is completed by the next, then
// stops the source registry and the https server and runs, resolves and verifies through the
// mirrored catalog with a fresh cache.
func TestMirror(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, dst := registrytest.Distribution(t), registrytest.WithReferrers(t)
	client := oci.NewClient(oci.Options{})
	p := fnexamples.Current()
	dir := t.TempDir()
	publisher, mirrorKeys := signtest.KeyPair(t, "publisher"), signtest.KeyPair(t, "mirror")
	pubKey := writeFile(t, dir, "publisher.pub", string(publisher.PublicPEM))
	privKey := writeFile(t, dir, "publisher.key", string(publisher.PrivatePEM))
	mirrorPub := writeFile(t, dir, "mirror.pub", string(mirrorKeys.PublicPEM))
	mirrorKey := writeFile(t, dir, "mirror.key", string(mirrorKeys.PrivatePEM))

	// the source: an exec artifact and an image (with an attached definition and signatures in both
	// formats) in the source registry; an executable and a script over https
	labels := bins.Fn["set-labels"]
	exe, err := client.Push(ctx, src.Host+"/functions/set-labels:v1", oci.PushOptions{
		Kind: oci.KindExec, Files: []oci.File{{Path: labels, Title: "set-labels", Platform: &ocispec.Platform{OS: p.OS, Architecture: p.Arch}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	image := src.Host + "/images/set-labels:v1@" + registrytest.PushImage(t, src.Host+"/images/set-labels:v1", "mirror").String()
	env := []string{"COSIGN_PASSWORD=" + signtest.Password}
	for _, args := range [][]string{
		{"attach", "--definition", filepath.Join(bins.Root, "examples", "definition.yaml"), image},
		{"sign", "--key", privKey, image},
		{"sign", "--key", privKey, "--signature-format", "bundle", image},
		{"sign", "--key", privKey, exe.Reference.String()},
	} {
		if out := (run{env: env}).krm(t, args...); out.code != 0 {
			t.Fatalf("%v: %s", args, out)
		}
	}
	script := filepath.Join(bins.Root, "examples", "functions", fnexamples.StarlarkScript)
	srv, _ := fntest.TLSFiles(t, map[string]string{"/set-namespace": bins.Fn["set-namespace"], "/script.star": script})
	env = append(env, "SSL_CERT_FILE="+fntest.CAFile(t, srv))
	sum := func(path string) string {
		s, err := fnexamples.FileSHA256(path)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	catalog := fmt.Sprintf(mirrorCatalog, p.OS, p.Arch, srv.URL+"/set-namespace", sum(bins.Fn["set-namespace"]),
		image, exe.Reference.String(), sum(labels), srv.URL+"/script.star", sum(script))
	if _, err := client.PushCatalog(ctx, src.Host+"/catalogs/platform:v1", []byte(catalog), oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := (run{env: env}).krm(t, "sign", "--key", privKey, src.Host+"/catalogs/platform:v1"); out.code != 0 {
		t.Fatal(out)
	}
	source := "oci://" + src.Host + "/catalogs/platform:v1"
	prefix := dst.Host + "/mirror"

	t.Run("dry run", func(t *testing.T) {
		out := run{env: env}.krm(t, "mirror", "--dry-run", "--key", pubKey, "--cache-dir", t.TempDir(), source, prefix)
		if out.code != 0 {
			t.Fatal(out)
		}
		for _, want := range []string{
			"would copy " + image + " -> " + prefix + "/images/set-labels:v1",
			"would download " + srv.URL + "/set-namespace -> " + prefix + "/functions/fn.example.com/setnamespace:v1-exec",
			"would push-catalog " + prefix + "/catalogs/platform:v1",
			"dry run: nothing was copied",
		} {
			if !strings.Contains(out.stdout, want) {
				t.Errorf("plan lacks %q:\n%s", want, out.stdout)
			}
		}
		if _, found, _ := client.Exists(ctx, prefix+"/catalogs/platform:v1"); found {
			t.Error("a dry run pushed the catalog")
		}
	})

	// a run that fails part-way (the script's sha256 is wrong in this copy of the catalog) leaves a
	// mirror the next run completes
	broken := writeFile(t, dir, "broken.yaml", strings.Replace(catalog, sum(script), strings.Repeat("0", 64), 1))
	out := run{env: env}.krm(t, "mirror", "--cache-dir", t.TempDir(), broken, prefix)
	if out.code != 1 || !strings.Contains(out.stderr, "nothing was pushed") {
		t.Fatalf("mirror with a wrong sha256 must fail at the script:\n%s", out)
	}

	mirrorArgs := []string{"mirror", "--key", pubKey, "--sign-key", mirrorKey, "--cache-dir", t.TempDir(), source, prefix}
	out = run{env: env}.krm(t, mirrorArgs...)
	if out.code != 0 {
		t.Fatal(out)
	}
	t.Logf("mirror:\n%s", out.stdout)
	lines := strings.Split(strings.TrimSpace(out.stdout), "\n")
	mirrored := lines[len(lines)-1]
	if !strings.HasPrefix(mirrored, "oci://"+prefix+"/catalogs/platform:v1@sha256:") {
		t.Fatalf("last line %q is not the mirrored catalog:\n%s", mirrored, out.stdout)
	}
	for _, want := range []string{
		// the failed run had copied the image and both executables already
		"copy " + image + " -> " + prefix + "/images/set-labels:v1@" + strings.SplitN(image, "@", 2)[1] + ": 0 sent",
		"legacy signature",
		"download " + srv.URL + "/set-namespace -> " + prefix + "/functions/fn.example.com/setnamespace:v1-exec@sha256:",
		"download " + srv.URL + "/script.star -> " + prefix + "/functions/fn.example.com/setannotations:v1-starlark@sha256:",
	} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("mirror output lacks %q:\n%s", want, out.stdout)
		}
	}
	out = run{env: env}.krm(t, mirrorArgs...)
	if out.code != 0 || !strings.Contains(out.stdout, "\n0 sent in all\n"+mirrored+"\n") {
		t.Errorf("a second run must copy nothing and print the same reference:\n%s", out)
	}

	// the air gap: neither the source registry nor the https server is there any more
	src.Close()
	srv.Close()

	pkg := t.TempDir()
	writeFile(t, pkg, "service.yaml", service)
	cfgs := []string{
		writeFile(t, dir, "ns.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nnamespace: mirrored\n"),
		writeFile(t, dir, "labels.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nlabels:\n  from: mirror\n"),
		writeFile(t, dir, "ann.yaml", "apiVersion: fn.example.com/v1\nkind: SetAnnotations\nannotations:\n  script: mirrored\n"),
	}
	// SetLabels also offers the container runtime, which needs Docker: its executable is enough here
	for _, step := range [][]string{{"--fn-config", cfgs[0], "--fn-config", cfgs[2]}, {"--fn-config", cfgs[1], "--runtime", "exec"}} {
		args := append([]string{"fn", "run", pkg, "--key", mirrorPub}, step...)
		if out := (run{}).krm(t, append(args, flags(t, mirrored)...)...); out.code != 0 {
			t.Fatal(out)
		}
	}
	got := readFile(t, filepath.Join(pkg, "service.yaml"))
	// the label as the function writes it on the YAML wire: kyaml's label setter single-quotes values
	for _, want := range []string{"namespace: mirrored", "from: 'mirror'", "script: mirrored"} {
		if !strings.Contains(got, want) {
			t.Errorf("the mirrored functions did not run (%q missing):\n%s", want, got)
		}
	}

	out = run{}.krm(t, append([]string{"resolve", "--key", mirrorPub, "--format", "json", "fn.example.com/v1", "SetLabels"}, flags(t, mirrored)...)...)
	if out.code != 0 || !strings.Contains(out.stdout, `"image": "`+prefix+"/images/set-labels:v1@") || !strings.Contains(out.stdout, "oci://"+prefix+"/functions/set-labels") {
		t.Errorf("resolve through the mirror:\n%s", out)
	}
	cache := t.TempDir()
	out = run{env: []string{"XDG_CACHE_HOME=" + cache}}.krm(t, "verify", "--key", mirrorPub, "--key", pubKey, mirrored)
	if out.code != 0 {
		t.Errorf("verify the mirrored catalog:\n%s", out)
	}
	// the copies keep their referrers and signatures: the definition and both signature formats
	out = run{env: []string{"XDG_CACHE_HOME=" + cache}}.krm(t, "discover", "--key", pubKey, prefix+"/images/set-labels:v1")
	for _, want := range []string{"definition  sha256:", "cosign-legacy  verified", "sigstore-bundle  verified"} {
		if out.code != 0 || !strings.Contains(out.stdout, want) {
			t.Errorf("discover on the mirrored image lacks %q:\n%s", want, out)
		}
	}
}

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
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// An exec function pulled from an OCI exec artifact, through a catalog that is itself an OCI
// artifact, signed: with the signer's key it runs, with another key it is refused.
func TestExecFromOCIArtifactWithSignedCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	host := fntest.Registry(t)
	client := oci.NewClient(oci.Options{})
	p := fnexamples.Current()
	bin := bins.Fn["set-labels"]
	exe, err := client.Push(ctx, host+"/functions/set-labels:v1", oci.PushOptions{
		Kind:  oci.KindExec,
		Files: []oci.File{{Path: bin, Title: "set-labels", Platform: &ocispec.Platform{OS: p.OS, Architecture: p.Arch}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := fnexamples.FileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(bins.Root, "examples", "functions", fnexamples.StarlarkScript)
	star, err := client.Push(ctx, host+"/functions/set-annotations:v1", oci.PushOptions{Kind: oci.KindStarlark, Files: []oci.File{{Path: script}}})
	if err != nil {
		t.Fatal(err)
	}
	scriptSum, err := fnexamples.FileSHA256(script)
	if err != nil {
		t.Fatal(err)
	}
	catalog := fmt.Sprintf(`apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: oci-functions
spec:
  krmFunctions:
  - group: fn.example.com
    names:
      kind: SetLabels
    description: Adds labels.
    publisher: example.com
    versions:
    - name: v1
      runtime:
        exec:
          platforms:
          - bin: set-labels
            os: %s
            arch: %s
            uri: oci://%s
            sha256: %s
  - group: fn.example.com
    names:
      kind: SetAnnotations
    description: Adds annotations, from a starlark OCI artifact.
    publisher: example.com
    versions:
    - name: v1
      runtime:
        starlark:
          ref: %s
          sha256: %s
`, p.OS, p.Arch, exe.Reference.String(), sum, star.Reference.String(), scriptSum)
	if _, err := client.PushCatalog(ctx, host+"/catalogs/platform:v1", []byte(catalog), oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	platform, other := signtest.KeyPair(t, "platform"), signtest.KeyPair(t, "other")
	if _, err := client.Sign(ctx, host+"/catalogs/platform:v1", platform.Signer, oci.SignOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pubFile := writeFile(t, dir, "platform.pub", string(platform.PublicPEM))
	otherFile := writeFile(t, dir, "other.pub", string(other.PublicPEM))
	cfg := writeFile(t, dir, "labels.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nlabels:\n  from: oci\n")
	ann := writeFile(t, dir, "ann.yaml", "apiVersion: fn.example.com/v1\nkind: SetAnnotations\nannotations:\n  script: from-oci\n")
	ref := "oci://" + host + "/catalogs/platform:v1"

	out := run{stdin: service}.krm(t, append([]string{"fn", "run", "-", "--fn-config", cfg, "--fn-config", ann, "--key", pubFile}, flags(t, ref)...)...)
	if out.code != 0 {
		t.Fatal(out)
	}
	// the label as the function writes it on the YAML wire: kyaml's label setter single-quotes values
	if !strings.Contains(out.stdout, "from: 'oci'") || !strings.Contains(out.stdout, "script: from-oci") {
		t.Errorf("the exec and starlark functions did not run:\n%s", out.stdout)
	}
	out = run{stdin: service}.krm(t, append([]string{"fn", "run", "-", "--fn-config", cfg, "--key", otherFile}, flags(t, ref)...)...)
	if out.code == 0 || !strings.Contains(out.stderr, "cannot fetch catalog") {
		t.Errorf("a catalog signed by another key must be refused:\n%s", out)
	}
	out = run{}.krm(t, "catalog", "view", "--key", pubFile, "--cache-dir", t.TempDir(), ref)
	if out.code != 0 || !strings.Contains(out.stdout, "Signature:  verified") || !strings.Contains(out.stdout, "oci://"+host+"/functions/set-labels") {
		t.Errorf("catalog view:\n%s", out)
	}
	out = run{}.krm(t, "catalog", "view", "--key", otherFile, "--cache-dir", t.TempDir(), ref)
	if out.code != 0 || !strings.Contains(out.stdout, "Signature:  signed, but by none of the keys") {
		t.Errorf("catalog view with another key:\n%s", out)
	}

	// a catalog that pins another digest than the artifact holds is refused before the download
	wrong := strings.Replace(catalog, sum, strings.Repeat("e", 64), 1)
	catFile := writeFile(t, dir, "wrong.yaml", wrong)
	out = run{stdin: service}.krm(t, append([]string{"fn", "run", "-", "--fn-config", cfg}, flags(t, catFile)...)...)
	if out.code == 0 || !strings.Contains(out.stderr, "sha256 digest mismatch") || !strings.Contains(out.stderr, "nothing was downloaded") {
		t.Errorf("want the pinned digest enforced:\n%s", out)
	}
}

package kpt_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
)

// fn render writes its status into the root Kptfile and changes nothing else of it (docs/kpt.md):
// a step in a flow mapping whose image holds ':' stays plain (yaml.v3's encoder would quote it), the
// four-space indentation, the comments and their spacing, and a field after the status stay as the
// author wrote them; an earlier status is replaced where it is. Success and failure alike.
func TestRenderChangesOnlyTheKptfileStatus(t *testing.T) {
	t.Parallel()
	const head = `# the package, as its author wrote it
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
    name: layout   # four spaces
    annotations: {config.kubernetes.io/local-config: "true"}
pipeline:
  mutators:
  - {image: example.com/kptdev/krm-functions-catalog/starlark:latest, configPath: run.yaml}   # flow
`
	const tail = `
# after the status
info: {a: b:c}
`
	const oldStatus = `status:
  conditions:
  - type: Other
    status: "True"
  - type: Rendered
    status: "False"
`
	for _, tc := range []struct {
		name, script string
		wantCode     int
		wantStatus   string
	}{
		{"success", `ctx.resource_list["items"][0]["data"] = {"rendered": "yes"}`, 0, `status:
  conditions:
  - type: Other
    status: "True"
  - type: Rendered
    status: "True"
    reason: RenderSuccess
  renderStatus:
    mutationSteps:
    - image: example.com/kptdev/krm-functions-catalog/starlark:latest
      exitCode: 0
`},
		{"failure", `fail("no")`, 1, `status:
  conditions:
  - type: Other
    status: "True"
  - type: Rendered
    status: "False"
    reason: RenderFailed
    message: 'Kptfile: example.com/kptdev/krm-functions-catalog/starlark:latest (starlark, StarlarkRun): function failed: 1 error result: [error]: fail: no'
  renderStatus:
    mutationSteps:
    - image: example.com/kptdev/krm-functions-catalog/starlark:latest
      stderr: 'failed to evaluate function: error: function failure'
      exitCode: 1
      results:
      - message: 'fail: no'
        severity: error
      errorResults:
      - message: 'fail: no'
        severity: error
    errorSummary: 'example.com/kptdev/krm-functions-catalog/starlark:latest: exit code 1'
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pkg := filepath.Join(t.TempDir(), "layout")
			files := map[string]string{
				"Kptfile": head + oldStatus + tail,
				"run.yaml": "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: run\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n" +
					"source: |\n  " + tc.script + "\n",
				"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			}
			for name, data := range files {
				if err := os.MkdirAll(pkg, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(pkg, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			code := cmd.Main(context.Background(), []string{"fn", "render", pkg, "--cache-dir", filepath.Join(t.TempDir(), "cache")},
				cmd.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, tc.wantCode, stderr.String())
			}
			got, err := os.ReadFile(filepath.Join(pkg, "Kptfile"))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(head+tc.wantStatus+tail, string(got)); d != "" {
				t.Errorf("Kptfile (-want +got):\n%s", d)
			}
		})
	}
}

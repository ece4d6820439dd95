package kpt_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
)

func TestRenderStepCondition(t *testing.T) {
	t.Parallel()
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"
	tests := []struct {
		name       string
		conditions [2]string // of the set-namespace and the set-labels step
		wantExit   bool      // render fails
		wantSteps  []string  // "image skipped" or "image ran", in order
		wantNS     bool      // the Deployment got the namespace
		wantLabels bool
	}{
		{name: "both hold", conditions: [2]string{`resources.exists(r, r.kind == "Deployment")`, `size(resources) > 0`},
			wantSteps: []string{"set-namespace ran", "set-labels ran"}, wantNS: true, wantLabels: true},
		{name: "the second does not hold", conditions: [2]string{`resources.exists(r, r.kind == "Deployment")`, `resources.all(r, r.kind != "Deployment")`},
			wantSteps: []string{"set-namespace ran", "set-labels skipped"}, wantNS: true},
		{name: "a condition sees the output of the steps before", conditions: [2]string{`true`, `resources.exists(r, has(r.metadata.namespace) && r.metadata.namespace == "staging")`},
			wantSteps: []string{"set-namespace ran", "set-labels ran"}, wantNS: true, wantLabels: true},
		{name: "not CEL: refused before anything runs", conditions: [2]string{`resources.exists(r,`, ``}, wantExit: true},
		{name: "not a bool: refused before anything runs", conditions: [2]string{`size(resources)`, ``}, wantExit: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pkg := t.TempDir()
			step := func(image, cfg, cond string) string {
				s := "    - image: example.com/kptdev/krm-functions-catalog/" + image + ":latest\n      configMap:\n        " + cfg + "\n"
				if cond != "" {
					s += "      condition: '" + cond + "'\n"
				}
				return s
			}
			kptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\npipeline:\n  mutators:\n" +
				step("set-namespace", "namespace: staging", tc.conditions[0]) + step("set-labels", "tier: backend", tc.conditions[1])
			for name, c := range map[string]string{"Kptfile": kptfile, "deploy.yaml": deploy} {
				if err := os.WriteFile(filepath.Join(pkg, name), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			code := cmd.Main(context.Background(), []string{"fn", "render", pkg, "--cache-dir", filepath.Join(t.TempDir(), "cache")},
				cmd.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
			t.Logf("exit %d\n%s", code, stderr.String())
			got, err := os.ReadFile(filepath.Join(pkg, "deploy.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantExit {
				if code == 0 || !strings.Contains(stderr.String(), "invalid step condition") {
					t.Fatalf("exit %d, want the condition refused", code)
				}
				if string(got) != deploy {
					t.Errorf("deploy.yaml changed:\n%s", got)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			if has := strings.Contains(string(got), "namespace: staging"); has != tc.wantNS {
				t.Errorf("namespace set: %v, want %v\n%s", has, tc.wantNS, got)
			}
			if has := strings.Contains(string(got), "tier: backend"); has != tc.wantLabels {
				t.Errorf("labels set: %v, want %v\n%s", has, tc.wantLabels, got)
			}
			data, err := os.ReadFile(filepath.Join(pkg, "Kptfile"))
			if err != nil {
				t.Fatal(err)
			}
			var kf struct {
				Status struct {
					RenderStatus struct {
						MutationSteps []struct {
							Image   string `yaml:"image"`
							Skipped bool   `yaml:"skipped"`
						} `yaml:"mutationSteps"`
					} `yaml:"renderStatus"`
				} `yaml:"status"`
			}
			if err := yaml.Unmarshal(data, &kf); err != nil {
				t.Fatal(err)
			}
			var steps []string
			for _, s := range kf.Status.RenderStatus.MutationSteps {
				how := "ran"
				if s.Skipped {
					how = "skipped"
				}
				name := strings.TrimSuffix(filepath.Base(s.Image), ":latest")
				steps = append(steps, name+" "+how)
			}
			if d := cmp.Diff(tc.wantSteps, steps); d != "" {
				t.Errorf("renderStatus steps (-want +got):\n%s", d)
			}
		})
	}
}

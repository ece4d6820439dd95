package kpt

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRecordAction(t *testing.T) {
	t.Parallel()
	// kpt's rules (pkg/lib/util/attribution): the group joins the krm part, once, in pkg-fn-live order
	tests := []struct{ cur, group, want string }{
		{"", "fn", "krm-fn"},
		{"krm-pkg", "fn", "krm-pkg-fn"},
		{"krm-fn", "live", "krm-fn-live"},
		{"krm-fn-live", "fn", "krm-fn-live"},
		{"krm-live", "pkg", "krm-pkg-live"},
		{"cnrm/landing-zone:networking/v0.4.0", "fn", "cnrm/landing-zone:networking/v0.4.0,krm-fn"},
		{"cnrm/landing-zone:networking/v0.4.0,krm-pkg,blueprints_controller", "fn", "cnrm/landing-zone:networking/v0.4.0,krm-pkg-fn,blueprints_controller"},
		// the value kpt wrote before it renamed its prefix has no krm part: the group is appended
		{"kpt-fn", "fn", "kpt-fn,krm-fn"},
		// kpt carries the groups of one krm part into the next
		{"krm-pkg,krm-live", "fn", "krm-pkg-fn,krm-pkg-fn-fn-live"},
	}
	for _, tc := range tests {
		if got := recordAction(tc.cur, tc.group); got != tc.want {
			t.Errorf("recordAction(%q, %q) = %q, want %q", tc.cur, tc.group, got, tc.want)
		}
	}
}

func TestRenderAttributesConfigConnectorResources(t *testing.T) {
	t.Parallel()
	kptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
	in := map[string]string{
		"Kptfile":     kptfile,
		"subnet.yaml": "apiVersion: compute.cnrm.cloud.google.com/v1beta1\nkind: ComputeSubnetwork\nmetadata:\n  name: subnet # the subnet\nspec:\n  region: us-east1\n",
		"pkg.yaml":    "apiVersion: serviceusage.cnrm.cloud.google.com/v1beta1\nkind: Service\nmetadata:\n  name: redis\n  annotations:\n    cnrm.cloud.google.com/blueprint: \"krm-pkg\"\n    owner: me\nspec:\n  resourceID: redis.googleapis.com\n",
		"lz.yaml":     "apiVersion: compute.cnrm.cloud.google.com/v1beta1\nkind: ComputeNetwork\nmetadata:\n  name: net\n  annotations:\n    cnrm.cloud.google.com/blueprint: cnrm/landing-zone:networking/v0.4.0\n",
		"empty.yaml":  "apiVersion: compute.cnrm.cloud.google.com/v1beta1\nkind: ComputeNetwork\nmetadata:\n  name: empty\n  annotations: {}\n",
		// local config is attributed too: kpt looks at the apiVersion alone
		"local.yaml":      "apiVersion: blueprints.cnrm.cloud.google.com/v1alpha1\nkind: Setters\nmetadata:\n  name: setters\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n",
		"deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
		// metadata empty in the file but not as read (the reader's path annotations): annotated
		"bare.yaml": "apiVersion: compute.cnrm.cloud.google.com/v1beta1\nkind: ComputeNetwork\nmetadata: {}\n",
	}
	attributed := map[string]string{
		"Kptfile":         kptfile,
		"subnet.yaml":     "apiVersion: compute.cnrm.cloud.google.com/v1beta1\nkind: ComputeSubnetwork\nmetadata:\n  name: subnet # the subnet\n  annotations:\n    cnrm.cloud.google.com/blueprint: 'krm-fn'\nspec:\n  region: us-east1\n",
		"pkg.yaml":        "apiVersion: serviceusage.cnrm.cloud.google.com/v1beta1\nkind: Service\nmetadata:\n  name: redis\n  annotations:\n    cnrm.cloud.google.com/blueprint: \"krm-pkg-fn\"\n    owner: me\nspec:\n  resourceID: redis.googleapis.com\n",
		"lz.yaml":         "apiVersion: compute.cnrm.cloud.google.com/v1beta1\nkind: ComputeNetwork\nmetadata:\n  name: net\n  annotations:\n    cnrm.cloud.google.com/blueprint: cnrm/landing-zone:networking/v0.4.0,krm-fn\n",
		"empty.yaml":      "apiVersion: compute.cnrm.cloud.google.com/v1beta1\nkind: ComputeNetwork\nmetadata:\n  name: empty\n  annotations:\n    cnrm.cloud.google.com/blueprint: 'krm-fn'\n",
		"local.yaml":      "apiVersion: blueprints.cnrm.cloud.google.com/v1alpha1\nkind: Setters\nmetadata:\n  name: setters\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n    cnrm.cloud.google.com/blueprint: 'krm-fn'\n",
		"deployment.yaml": in["deployment.yaml"],
		"bare.yaml":       "apiVersion: compute.cnrm.cloud.google.com/v1beta1\nkind: ComputeNetwork\nmetadata:\n  annotations:\n    cnrm.cloud.google.com/blueprint: 'krm-fn'\n",
	}
	optedOut := map[string]string{}
	for p, c := range in {
		optedOut[p] = c
	}
	// kyaml's writer drops an empty annotations map, in kpt as here
	optedOut["empty.yaml"] = "apiVersion: compute.cnrm.cloud.google.com/v1beta1\nkind: ComputeNetwork\nmetadata:\n  name: empty\n"
	// (kpt's writer also drops an empty metadata map, which an unchanged file here keeps)
	delete(optedOut, "bare.yaml")
	tests := []struct {
		name string
		env  map[string]string
		want map[string]string
	}{
		{name: "attributed", want: attributed},
		{name: "opted out", env: map[string]string{DisableAttributionEnv: "1"}, want: optedOut},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for p, c := range in {
				if _, ok := tc.want[p]; !ok {
					continue
				}
				if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := Render(context.Background(), dir, Options{Getenv: func(k string) string { return tc.env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := res.Package.Write(res.Items); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for p := range tc.want {
				data, err := os.ReadFile(filepath.Join(dir, p))
				if err != nil {
					t.Fatal(err)
				}
				got[p] = string(data)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("package after render (-kpt +krm-catalog):\n%s", d)
			}
		})
	}
}

package kpt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestParseKptfile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     *Kptfile
		wantErr  string
	}{
		{
			name: "steps of every kind",
			in: `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
    - image: example.com/fn/set-namespace:v1
      configMap: {namespace: prod}
      selectors: [{kind: Deployment, labels: {app: web}}]
      exclude: [{kind: Kptfile}]
    - exec: "./fn --flag"
      name: local
  validators:
    - configPath: limits.yaml
`,
			want: &Kptfile{Name: "app", Pipeline: Pipeline{
				Mutators: []Function{
					{Image: "example.com/fn/set-namespace:v1", ConfigMap: map[string]string{"namespace": "prod"},
						Selectors: []Selector{{Kind: "Deployment", Labels: map[string]string{"app": "web"}}}, Exclude: []Selector{{Kind: "Kptfile"}}},
					{Exec: "./fn --flag", Name: "local"},
				},
				Validators: []Function{{ConfigPath: "limits.yaml"}},
			}},
		},
		{name: "empty pipeline", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: x\npipeline:\n", want: &Kptfile{Name: "x"}},
		{name: "no pipeline", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: x\n", want: &Kptfile{Name: "x"}},
		{name: "old schema", in: "apiVersion: kpt.dev/v1alpha2\nkind: Kptfile\n", wantErr: `apiVersion "kpt.dev/v1alpha2" is not supported`},
		{name: "not a Kptfile", in: "apiVersion: v1\nkind: ConfigMap\n", wantErr: "not Kptfile"},
		{name: "empty", in: "", wantErr: "empty"},
		{name: "image and exec", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n  - {image: a, exec: b}\n", wantErr: "mutually exclusive"},
		{name: "nothing to run", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  validators:\n  - configMap: {a: b}\n", wantErr: "needs image, exec, or a configPath"},
		{name: "configPath and configMap", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n  - {configPath: a.yaml, configMap: {a: b}}\n", wantErr: "mutually exclusive"},
		{name: "unknown pipeline field", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  early-mutators:\n  - {image: a}\n", wantErr: "pipeline: field(s) early-mutators not supported"},
		{name: "unknown step field", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n  - {image: a, entrypoint: \"x\"}\n", wantErr: "entrypoint not supported"},
		{name: "condition not CEL over resources", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n  - {image: a, condition: \"x\"}\n", wantErr: "invalid step condition \"x\""},
		{name: "tag without image", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n  - {exec: a, tag: \"~1\"}\n", wantErr: "tag needs an image"},
		{name: "unknown selector field", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n  - {image: a, selectors: [{packagePath: ./db}]}\n", wantErr: "selectors[0]: field(s) packagePath not supported"},
		{name: "unknown exclusion field", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n  - {image: a, exclude: [{kind: A, path: x}]}\n", wantErr: "exclude[0]: field(s) path not supported"},
		{name: "pipeline not a mapping", in: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline: [a]\n", wantErr: "pipeline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseKptfile([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalidKptfile) {
					t.Fatalf("error %v, want one saying %q wrapping ErrInvalidKptfile", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestSplitCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "sed -e 's/foo/bar/'", want: []string{"sed", "-e", "s/foo/bar/"}},
		{in: `fn "a b" c\ d "x\"y" 'it''s'`, want: []string{"fn", "a b", "c d", `x"y`, "its"}},
		{in: "  ./fn  ", want: []string{"./fn"}},
		{in: "fn 'open", wantErr: true},
		{in: `fn "open`, wantErr: true},
		{in: "   ", wantErr: true},
	}
	for _, tt := range tests {
		got, err := splitCommand(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("splitCommand(%q) error %v, want error %t", tt.in, err, tt.wantErr)
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("splitCommand(%q) (-want +got):\n%s", tt.in, d)
		}
	}
}

func TestSelection(t *testing.T) {
	t.Parallel()
	items := []*yaml.RNode{
		yaml.MustParse("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: a\n  labels: {app: web}\n"),
		yaml.MustParse("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: b\n  annotations: {team: blue}\n"),
		yaml.MustParse("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"),
	}
	tests := []struct {
		name string
		f    Function
		want []string
	}{
		{"all", Function{}, []string{"Deployment", "Service", "Kptfile"}},
		{"kind", Function{Selectors: []Selector{{Kind: "Service"}}}, []string{"Service"}},
		{"any selector", Function{Selectors: []Selector{{Kind: "Service"}, {Labels: map[string]string{"app": "web"}}}}, []string{"Deployment", "Service"}},
		{"every field of a selector", Function{Selectors: []Selector{{Name: "web", Namespace: "b"}}}, []string{"Service"}},
		{"annotation", Function{Selectors: []Selector{{Annotations: map[string]string{"team": "blue"}}}}, []string{"Service"}},
		{"exclude", Function{Exclude: []Selector{{Kind: "Kptfile"}, {APIVersion: "v1"}}}, []string{"Deployment"}},
		{"select then exclude", Function{Selectors: []Selector{{Name: "web"}}, Exclude: []Selector{{Namespace: "a"}}}, []string{"Service"}},
		{"label value must match", Function{Selectors: []Selector{{Labels: map[string]string{"app": "db"}}}}, nil},
	}
	for _, tt := range tests {
		in, out := tt.f.partition(items)
		var got []string
		for _, it := range in {
			got = append(got, it.GetKind())
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s: selected (-want +got):\n%s", tt.name, d)
		}
		if len(in)+len(out) != len(items) {
			t.Errorf("%s: %d selected + %d others, want %d", tt.name, len(in), len(out), len(items))
		}
	}
}

func TestIsStarlarkImage(t *testing.T) {
	t.Parallel()
	for image, want := range map[string]bool{
		"localhost:5000/fns/starlark:v0.4": true,
		"example.com/kpt-fn/starlark":      true,
		"example.com/kpt-fn/set-labels:v1": false,
		"example.com/starlark/set-labels":  false,
	} {
		if got := isStarlarkImage(image); got != want {
			t.Errorf("isStarlarkImage(%q) = %t, want %t", image, got, want)
		}
	}
}

// FuzzParseKptfile: a Kptfile is outside input; parsing must fail cleanly, never panic.
func FuzzParseKptfile(f *testing.F) {
	var seeds []string
	_ = filepath.WalkDir(filepath.Join("testdata", "fn-render"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "Kptfile" {
			seeds = append(seeds, p)
		}
		return nil
	})
	for _, p := range seeds {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline: [1, 2]\n"))
	f.Add([]byte("apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators: {a: b}\n"))
	f.Add([]byte("apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n  - image: a/b\n    tag: ~1.2\n    condition: resources.exists(r, r.kind == 'A')\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kf, err := ParseKptfile(data)
		if err == nil {
			for _, s := range append(kf.Pipeline.Mutators, kf.Pipeline.Validators...) {
				if s.check() != nil {
					t.Fatalf("a parsed Kptfile has an invalid step %+v", s)
				}
			}
		}
	})
}

func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"sed -e 's/foo/bar/'", `a "b\"c" d\ e`, "'", `"`, `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args, err := splitCommand(s)
		if err == nil && len(args) == 0 {
			t.Fatal("no error and no command")
		}
	})
}

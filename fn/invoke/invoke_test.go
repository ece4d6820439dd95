package invoke

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
)

// setNamespace is a function that sets every item's namespace to the config's, or, with path set,
// moves every item to that path annotation.
type setNamespace struct{ path string }

func (f setNamespace) Run(_ context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	ns, err := in.FunctionConfig.GetString("namespace")
	if err != nil {
		return nil, err
	}
	for _, it := range in.Items {
		if err := it.SetNamespace(ns); err != nil {
			return nil, err
		}
		if f.path != "" {
			if err := it.PipeE(yaml.SetAnnotation("internal.config.kubernetes.io/path", f.path)); err != nil {
				return nil, err
			}
		}
	}
	return in, nil
}

// preparer makes one step per config; invalid configs (kind Invalid) fail as a runner's do.
type preparer struct {
	f fn.Function
}

func (p *preparer) Prepare(_ context.Context, configs []*yaml.RNode) ([]fn.Step, []fn.FunctionResults, error) {
	var steps []fn.Step
	for _, c := range configs {
		if c.GetKind() == "Invalid" {
			return nil, []fn.FunctionResults{{Function: "Invalid", ExitCode: 1, Results: []fn.Result{{Message: "bad", Severity: fn.SeverityError}}}}, errors.New("invalid config")
		}
		steps = append(steps, fn.Step{Name: c.GetKind(), Function: p.f, Config: c})
	}
	return steps, nil, nil
}

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # kept\n"

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunStandardInput(t *testing.T) {
	t.Parallel()
	cfgDir := t.TempDir()
	cfg := writeFile(t, cfgDir, "fn.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns\nnamespace: shop\n")
	invalid := writeFile(t, cfgDir, "invalid.yaml", "apiVersion: fn.example.com/v1\nkind: Invalid\nmetadata:\n  name: x\n")
	list := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(cm, "\n"), "\n", "\n  ") +
		"\nfunctionConfig:\n  apiVersion: fn.example.com/v1\n  kind: SetNamespace\n  metadata:\n    name: ns\n  namespace: from-list\n"
	tests := []struct {
		name    string
		configs []string
		stdin   string
		want    string
		runs    int
		wantErr func(error) bool
	}{
		{name: "stream in, stream out", configs: []string{cfg}, stdin: cm,
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # kept\n  namespace: shop\n", runs: 1},
		{name: "the list's functionConfig", stdin: list, runs: 1,
			want: "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a # kept\n    namespace: from-list\nfunctionConfig:\n  apiVersion: fn.example.com/v1\n  kind: SetNamespace\n  metadata:\n    name: ns\n  namespace: from-list\n"},
		{name: "no function", stdin: cm, wantErr: func(err error) bool {
			var ie *InputError
			return errors.Is(err, ErrNoFunction) && errors.As(err, &ie)
		}},
		{name: "unreadable input", configs: []string{cfg}, stdin: "a: [", wantErr: func(err error) bool {
			var ie *InputError
			return errors.As(err, &ie) && strings.Contains(err.Error(), "standard input")
		}},
		{name: "missing config file", configs: []string{filepath.Join(cfgDir, "nope.yaml")}, stdin: cm, wantErr: func(err error) bool {
			var ie *InputError
			return errors.As(err, &ie) && errors.Is(err, os.ErrNotExist)
		}},
		{name: "invalid config: its results, nothing ran", configs: []string{invalid}, stdin: cm, runs: 1, wantErr: func(err error) bool {
			var ie *InputError
			return err != nil && !errors.As(err, &ie)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &preparer{f: setNamespace{}}
			out, err := Run(context.Background(), p, Request{ConfigFiles: tc.configs, Stdin: strings.NewReader(tc.stdin)})
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("error %v is not the one expected", err)
				}
				if out != nil && len(out.Runs) != tc.runs {
					t.Errorf("%d runs reported, want %d", len(out.Runs), tc.runs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(out.Output)); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if len(out.Runs) != tc.runs || out.Changes != nil {
				t.Errorf("runs %d, changes %v; want %d runs and no change", len(out.Runs), out.Changes, tc.runs)
			}
		})
	}
}

func TestRunPackage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		path    string // where the function moves the items
		dryRun  bool
		viaLink bool // run over a symbolic link to the package
		want    map[string]string
		output  string
		wantErr bool
	}{
		{name: "written back", want: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # kept\n  namespace: shop\n"}},
		{name: "dry run prints, writes nothing", dryRun: true, want: map[string]string{"cm.yaml": cm},
			output: "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a # kept\n    annotations:\n      internal.config.kubernetes.io/path: 'cm.yaml'\n      config.kubernetes.io/path: 'cm.yaml'\n      internal.config.kubernetes.io/index: '0'\n      config.kubernetes.io/index: '0'\n    namespace: shop\n"},
		{name: "the write rule refuses: a rejected run, nothing written", path: "run.sh", want: map[string]string{"cm.yaml": cm}, wantErr: true},
		{name: "a dry run refuses what the write would", path: "run.sh", dryRun: true, want: map[string]string{"cm.yaml": cm}, wantErr: true},
		{name: "a dry run refuses a path leaving the package", path: "../x.yaml", dryRun: true, want: map[string]string{"cm.yaml": cm}, wantErr: true},
		{name: "through a symbolic link to the package", viaLink: true, want: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # kept\n  namespace: shop\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, dir, "cm.yaml", cm)
			cfg := writeFile(t, t.TempDir(), "fn.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns\nnamespace: shop\n")
			target := dir
			if tc.viaLink {
				target = filepath.Join(t.TempDir(), "link")
				if err := os.Symlink(dir, target); err != nil {
					t.Fatal(err)
				}
			}
			out, err := Run(context.Background(), &preparer{f: setNamespace{path: tc.path}}, Request{ConfigFiles: []string{cfg}, Dir: target, DryRun: tc.dryRun})
			if tc.wantErr {
				var rej *fn.RejectedError
				if err == nil || !errors.Is(err, fn.ErrInvalidPackage) || !errors.As(err, &rej) {
					t.Fatalf("error %v, want a fn.RejectedError wrapping fn.ErrInvalidPackage", err)
				}
				// a refused write is the last run's result; a path leaving the package fails its
				// step without a result, as kpt's function runner fails it: the error says why
				last := out.Results()[len(out.Results())-1]
				why := err.Error()
				if len(last.Results) > 0 {
					why = last.Results[0].Message
				}
				if last.ExitCode != 1 || !strings.Contains(why, tc.path) {
					t.Errorf("the last run is %+v (error %v), want the refusal naming %s", last, err, tc.path)
				}
				if out.Output != nil || out.Changes != nil {
					t.Errorf("a rejected run has output %q and changes %v, want none", out.Output, out.Changes)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.output, string(out.Output)); diff != "" {
					t.Errorf("output (-want +got):\n%s", diff)
				}
			}
			for name, want := range tc.want {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, string(got)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

// TestPackageOutputWriteRule: writing back and a dry run both apply the write rule; printing for
// another tool (fn render --output stdout, as kpt's ByteWriter) does not, since nothing is written
// into the package.
func TestPackageOutputWriteRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dest    Destination
		wantErr bool
	}{
		{dest: WriteBack, wantErr: true},
		{dest: DryRun, wantErr: true},
		{dest: Print},
	}
	for _, tc := range tests {
		t.Run(tc.dest.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, dir, "cm.yaml", cm)
			pkg, items, err := fn.ReadPackage(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"internal.config.kubernetes.io/path", "config.kubernetes.io/path"} {
				if err := items[0].PipeE(yaml.SetAnnotation(k, "../outside.yaml")); err != nil {
					t.Fatal(err)
				}
			}
			out, err := PackageOutput(pkg, items, tc.dest)
			if tc.wantErr {
				if !errors.Is(err, fn.ErrInvalidPackage) || out != nil {
					t.Fatalf("outcome %+v, error %v; want none and fn.ErrInvalidPackage", out, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out.Output), "../outside.yaml") || out.Changes != nil {
				t.Errorf("output %q, changes %v; want the item printed, nothing to write", out.Output, out.Changes)
			}
		})
	}
}

func TestProxy(t *testing.T) {
	t.Parallel()
	list := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\nfunctionConfig:\n  apiVersion: fn.example.com/v1\n  kind: %s\n  metadata:\n    name: ns\n    annotations:\n      config.kubernetes.io/function: |\n        exec:\n          path: krm-catalog\n  namespace: shop\n"
	t.Run("runs the config's function, not the annotation's", func(t *testing.T) {
		t.Parallel()
		out, err := Proxy(context.Background(), &preparer{f: setNamespace{}}, []byte(strings.Replace(list, "%s", "SetNamespace", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "    namespace: shop\n") {
			t.Errorf("the item has no namespace:\n%s", out)
		}
	})
	t.Run("a failure is in the results, the items unchanged", func(t *testing.T) {
		t.Parallel()
		out, err := Proxy(context.Background(), &preparer{f: setNamespace{}}, []byte(strings.Replace(list, "%s", "Invalid", 1)))
		if err == nil {
			t.Fatal("no error")
		}
		if !strings.Contains(string(out), "results:\n- message: bad\n  severity: error\n") || strings.Contains(string(out), "    namespace: shop\n") {
			t.Errorf("output:\n%s", out)
		}
	})
	t.Run("no functionConfig", func(t *testing.T) {
		t.Parallel()
		_, err := Proxy(context.Background(), &preparer{}, []byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"))
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Fatalf("error %v, want an InputError", err)
		}
	})
}

// TestRunLeavesItsConfigFileInThePackageAlone: a --fn-config file inside the package is not
// function input and its file is not changed, local config or not, as kpt fn eval treats its
// --fn-config (kpt's runfn excludes the resources read from that path and writes them back as read).
func TestRunLeavesItsConfigFileInThePackageAlone(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, config string }{
		{"a resource", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns\nnamespace: shop\n"},
		{"local config", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nnamespace: shop\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, dir, "cm.yaml", cm)
			cfg := writeFile(t, dir, "fn.yaml", tc.config)
			// Run writes the package itself
			if _, err := Run(context.Background(), &preparer{f: setNamespace{}}, Request{ConfigFiles: []string{cfg}, Dir: dir}); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # kept\n  namespace: shop\n", "fn.yaml": tc.config}
			for name, w := range want {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(w, string(got)); d != "" {
					t.Errorf("%s (-want +got):\n%s", name, d)
				}
			}
		})
	}
}

// generator answers a list of ConfigMaps, its results and its exit code whatever it is sent, as a
// process function does (fn.RawFunction).
type generator struct {
	items, results string
	exit           int
}

func (g generator) answer() string {
	return "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + g.items + g.results
}

func (g generator) RunRaw(_ context.Context, in *fn.ResourceList, stdout io.Writer) (*fn.RawCall, error) {
	sent, err := in.Encode(fn.YAML)
	if err != nil {
		return nil, err
	}
	call := &fn.RawCall{Sent: sent, Format: fn.YAML, In: in}
	if g.exit != 0 {
		call.ExitErr = &fn.FunctionError{ExitCode: g.exit, Err: fmt.Errorf("exit status %d", g.exit)}
	}
	_, err = io.WriteString(stdout, g.answer())
	return call, err
}

func (g generator) Run(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	var b bytes.Buffer
	call, err := g.RunRaw(ctx, in, &b)
	if err != nil {
		return nil, err
	}
	return call.Decode(b.Bytes())
}

// A large output of a process function is written item by item (Report.OutputTo), as it would
// be printed whole; a failed call prints nothing.
func TestRunStandardInputStreamed(t *testing.T) {
	t.Parallel()
	var items strings.Builder
	for i := 0; items.Len() < 17<<20; i++ {
		fmt.Fprintf(&items, "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: generated-%d\n  data:\n    key: %s\n", i, strings.Repeat("x", 200))
	}
	const (
		config  = "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: gen\n"
		results = "results:\n- message: generated\n  severity: info\n"
	)
	stdin := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n" + config
	for _, tt := range []struct {
		name    string
		exit    int
		want    string
		wantErr bool
	}{
		{name: "exit 0", want: "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + items.String() + config + results},
		{name: "exit 1", exit: 1, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := generator{items: items.String(), results: results, exit: tt.exit}
			rep, err := Run(context.Background(), &preparer{f: g}, Request{Stdin: strings.NewReader(stdin)})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Run: %v, want an error: %v", err, tt.wantErr)
			}
			if tt.wantErr {
				if rep.Output != nil || rep.OutputTo != nil {
					t.Errorf("a failed run prints its output")
				}
				return
			}
			if rep.OutputTo == nil {
				t.Fatalf("not streamed (%d bytes whole)", len(rep.Output))
			}
			var out bytes.Buffer
			if _, err := rep.OutputTo.WriteTo(&out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("output: %d bytes, want %d:\n%.500s", out.Len(), len(tt.want), out.String())
			}
		})
	}
}

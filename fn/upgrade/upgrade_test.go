package upgrade

import (
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// versionless matches what an upgrade may change: an image's tag and digest, a config's API version.
var versionless = regexp.MustCompile(`:\d+\.\d+\.\d+(@sha256:[0-9a-f]{64})?|fn\.example\.com/v\d+`)

var update = flag.Bool("update", false, "rewrite testdata/golden from what the upgrade writes")

// The test catalogs are three releases of four functions (testdata/catalogs):
//
//	set-labels      1.0.0, 1.1.0 (safe), 2.0.0 (labels renamed tags: the schema refuses the
//	                config, and catalog diff finds it breaking)
//	set-namespace   1.0.0, 1.1.0 (namespace at most 8 characters: only the schema check sees it)
//	require-limits  1.0.0, 1.0.1 (safe), 2.0.0 (an enum narrowed: breaking, though the config
//	                still validates)
//	SetAnnotations  v1, v2 (found by kind: the config's apiVersion is rewritten)
var releases3 = []string{"fns-1.0.0.yaml", "fns-1.1.0.yaml", "fns-2.0.0.yaml"}

// testResolver trusts the given test catalogs, searched in that order.
func testResolver(t testing.TB, names ...string) *resolver.Resolver {
	t.Helper()
	var refs []string
	for _, n := range names {
		refs = append(refs, filepath.Join("testdata", "catalogs", n))
	}
	r, err := resolver.New(resolver.Options{Catalogs: refs, Trusted: refs, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// copyTree copies testdata/tree into a temporary directory and returns it.
func copyTree(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	testenv.CopyTree(t, filepath.Join("testdata", "tree"), dst)
	return dst
}

// snapshot reads every file under dir, by slash path.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// row is a step as a test states it.
type row struct {
	step, function, current, newest string
	available                       Level
	status                          Status
	to                              string
}

func rows(dir string, steps []*Step) []row {
	var out []row
	for _, s := range steps {
		r := row{step: strings.TrimPrefix(filepath.ToSlash(s.Step), filepath.ToSlash(dir)+"/"), function: s.Function, available: s.Available, status: s.Status}
		if s.Current != nil {
			r.current = s.Current.Version
		}
		if s.Newest != nil {
			r.newest = s.Newest.Version
		}
		if s.To != nil {
			r.to = s.To.Version
		}
		out = append(out, r)
	}
	return out
}

func TestList(t *testing.T) {
	t.Parallel()
	dir := copyTree(t)
	before := snapshot(t, dir)
	rep, err := List(context.Background(), []string{dir}, Options{Resolver: testResolver(t, releases3...)})
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"app/composition.yaml transformers[0]", "fn.example.com/SetLabels", "1.0.0", "2.0.0", Major, Outdated, ""},
		{"app/composition.yaml transformers[1]", "fn.example.com/SetAnnotations", "v1", "v2", Major, Outdated, ""},
		{"shop/Kptfile pipeline.mutators[0]", "fn.example.com/SetLabels", "1.0.0", "2.0.0", Major, Outdated, ""},
		{"shop/Kptfile pipeline.mutators[1]", "fn.example.com/SetNamespace", "1.0.0", "1.1.0", Minor, Outdated, ""},
		{"shop/Kptfile pipeline.validators[0]", "fn.example.com/RequireResourceLimits", "1.0.0", "2.0.0", Major, Outdated, ""},
		{"shop/cart/Kptfile pipeline.mutators[0]", "fn.example.com/SetAnnotations", "v1", "v2", Major, Outdated, ""},
		{"web/kustomization.yaml transformers[1]", "fn.example.com/SetNamespace", "1.0.0", "1.1.0", Minor, Outdated, ""},
		{"web/kustomization.yaml transformers[0]", "fn.example.com/SetLabels", "1.0.0", "2.0.0", Major, Outdated, ""},
		{"web/kustomization.yaml validators[0]", "fn.example.com/RequireResourceLimits", "1.0.1", "2.0.0", Major, Outdated, ""},
	}
	if d := cmp.Diff(want, rows(dir, rep.Steps), cmp.AllowUnexported(row{})); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
	if rep.Summary.Outdated != 9 || rep.Summary.Steps != 9 {
		t.Errorf("summary %+v", rep.Summary)
	}
	if d := cmp.Diff(before, snapshot(t, dir)); d != "" {
		t.Errorf("listing changed the tree:\n%s", d)
	}
}

// TestUpgradeGolden upgrades the test tree to the latest safe versions: every touched Kptfile,
// Kustomization, Composition and config is byte for byte its golden file (comments, key order,
// flow mappings, quoting and blank lines as they were: only the versions change), every other
// file is untouched, and a second upgrade changes nothing.
func TestUpgradeGolden(t *testing.T) {
	t.Parallel()
	dir := copyTree(t)
	before := snapshot(t, dir)
	o := Options{Resolver: testResolver(t, releases3...), To: Latest, Write: true}
	rep, err := Upgrade(context.Background(), []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"app/composition.yaml transformers[0]", "fn.example.com/SetLabels", "1.0.0", "2.0.0", Major, Upgraded, "1.1.0"},
		{"app/composition.yaml transformers[1]", "fn.example.com/SetAnnotations", "v1", "v2", Major, Upgraded, "v2"},
		{"shop/Kptfile pipeline.mutators[0]", "fn.example.com/SetLabels", "1.0.0", "2.0.0", Major, Upgraded, "1.1.0"},
		{"shop/Kptfile pipeline.mutators[1]", "fn.example.com/SetNamespace", "1.0.0", "1.1.0", Minor, Held, ""},
		{"shop/Kptfile pipeline.validators[0]", "fn.example.com/RequireResourceLimits", "1.0.0", "2.0.0", Major, Upgraded, "1.0.1"},
		{"shop/cart/Kptfile pipeline.mutators[0]", "fn.example.com/SetAnnotations", "v1", "v2", Major, Upgraded, "v2"},
		{"web/kustomization.yaml transformers[1]", "fn.example.com/SetNamespace", "1.0.0", "1.1.0", Minor, Upgraded, "1.1.0"},
		{"web/kustomization.yaml transformers[0]", "fn.example.com/SetLabels", "1.0.0", "2.0.0", Major, Upgraded, "1.1.0"},
		{"web/kustomization.yaml validators[0]", "fn.example.com/RequireResourceLimits", "1.0.1", "2.0.0", Major, Held, ""},
	}
	if d := cmp.Diff(want, rows(dir, rep.Steps), cmp.AllowUnexported(row{})); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
	// the reasons name the violation at its line, and the breaking change
	reasons := map[string][]Reason{}
	for _, s := range rep.Steps {
		for _, r := range s.Reasons {
			r.File = strings.TrimPrefix(filepath.ToSlash(r.File), filepath.ToSlash(dir)+"/")
			r.Changes = nil
			reasons[strings.TrimPrefix(filepath.ToSlash(s.Step), filepath.ToSlash(dir)+"/")] = append(reasons[strings.TrimPrefix(filepath.ToSlash(s.Step), filepath.ToSlash(dir)+"/")], r)
		}
	}
	labels2 := []Reason{
		{Version: "2.0.0", Kind: "schema", Message: "functionConfig: missing properties: 'tags'", File: "shop/labels.yaml", Line: 1},
		{Version: "2.0.0", Kind: "breaking", Message: "field-removed labels: configs that set it are refused, or the setting is silently ignored; field-added tags: existing configs do not set it"},
	}
	wantReasons := map[string][]Reason{
		"shop/Kptfile pipeline.mutators[0]":    labels2,
		"shop/Kptfile pipeline.mutators[1]":    {{Version: "1.1.0", Kind: "schema", Message: "functionConfig field namespace: namespace: length must be <= 8, got 10", File: "shop/namespace.yaml", Line: 8}},
		"shop/Kptfile pipeline.validators[0]":  {{Version: "2.0.0", Kind: "breaking", Message: "enum-narrowed require[]: configs that use the removed values are refused"}},
		"web/kustomization.yaml validators[0]": {{Version: "2.0.0", Kind: "breaking", Message: "enum-narrowed require[]: configs that use the removed values are refused"}},
	}
	for k, v := range wantReasons {
		if d := cmp.Diff(v, reasons[k]); d != "" {
			t.Errorf("%s: reasons (-want +got):\n%s", k, d)
		}
	}

	after := snapshot(t, dir)
	golden := filepath.Join("testdata", "golden")
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		for name, content := range after {
			if content == before[name] {
				continue
			}
			p := filepath.Join(golden, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want2 := snapshot(t, golden)
	for name, content := range before {
		if _, changed := want2[name]; !changed {
			want2[name] = content
		}
	}
	if d := cmp.Diff(want2, after); d != "" {
		t.Errorf("the tree after the upgrade (-golden +got):\n%s", d)
	}
	// held to the original independently of the golden files: with the versions taken out, every
	// file is what it was, byte for byte
	for name, content := range after {
		if got, want := versionless.ReplaceAllString(content, "VERSION"), versionless.ReplaceAllString(before[name], "VERSION"); got != want {
			t.Errorf("%s changed beyond its versions:\n%s", name, cmp.Diff(want, got))
		}
	}
	var touched []string
	for _, f := range rep.Files {
		touched = append(touched, strings.TrimPrefix(filepath.ToSlash(f.Path), filepath.ToSlash(dir)+"/"))
	}
	wantTouched := []string{"app/composition.yaml", "shop/Kptfile", "shop/cart/annotations.yaml", "web/kustomization.yaml", "web/labels.yaml"}
	if d := cmp.Diff(wantTouched, touched); d != "" {
		t.Errorf("files written (-want +got):\n%s", d)
	}

	again, err := Upgrade(context.Background(), []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Files) != 0 || again.Summary.Upgraded != 0 {
		t.Errorf("a second upgrade: %d files, %d steps upgraded; want none", len(again.Files), again.Summary.Upgraded)
	}
	if d := cmp.Diff(after, snapshot(t, dir)); d != "" {
		t.Errorf("a second upgrade changed the tree:\n%s", d)
	}
}

// A dry run writes nothing, and its diffs are the changes the upgrade writes.
func TestUpgradeDryRun(t *testing.T) {
	t.Parallel()
	dir := copyTree(t)
	before := snapshot(t, dir)
	rep, err := Upgrade(context.Background(), []string{dir}, Options{Resolver: testResolver(t, releases3...), To: Latest})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, snapshot(t, dir)); d != "" {
		t.Errorf("a dry run changed the tree:\n%s", d)
	}
	if !rep.DryRun || len(rep.Files) != 5 {
		t.Fatalf("dry run %v, %d files", rep.DryRun, len(rep.Files))
	}
	kptfile := filepath.ToSlash(filepath.Join(dir, "shop", "Kptfile"))
	for _, f := range rep.Files {
		if f.Path != kptfile {
			continue
		}
		want := "--- " + kptfile + "\n+++ " + kptfile + `
@@ -11,11 +11,11 @@
 pipeline:
     # mutators run in order
     mutators:
-      - image: registry.example.com/fns/set-labels:1.0.0   # labels first
+      - image: registry.example.com/fns/set-labels:1.1.0@sha256:25e969c88c15fb21d8bbb3daed10300e084d187579da88072339df6174fa9932   # labels first
         configPath: labels.yaml
 
       - name: namespace
         image: "registry.example.com/fns/set-namespace:1.0.0"
         configPath: namespace.yaml
     validators:
-    - {image: 'registry.example.com/fns/require-limits:1.0.0', configPath: limits.yaml}
+    - {image: 'registry.example.com/fns/require-limits:1.0.1@sha256:a25b279984105b7577be52d93bbac9669922c7b7af02157cb0aae2f4bb78772e', configPath: limits.yaml}
`
		if d := cmp.Diff(want, f.Diff); d != "" {
			t.Errorf("diff of the Kptfile (-want +got):\n%s", d)
		}
		return
	}
	t.Errorf("no diff of %s", kptfile)
}

func TestUpgradeTo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		to   Level
		only []string
		want map[string]string // step → version it is upgraded to; steps not named stay
	}{
		{to: Patch, want: map[string]string{
			"shop/Kptfile pipeline.validators[0]": "1.0.1",
		}},
		{to: Minor, want: map[string]string{
			"app/composition.yaml transformers[0]":   "1.1.0",
			"shop/Kptfile pipeline.mutators[0]":      "1.1.0",
			"shop/Kptfile pipeline.validators[0]":    "1.0.1",
			"web/kustomization.yaml transformers[0]": "1.1.0",
			"web/kustomization.yaml transformers[1]": "1.1.0",
		}},
		{to: Latest, only: []string{"fn.example.com/SetAnnotations"}, want: map[string]string{
			"app/composition.yaml transformers[1]":   "v2",
			"shop/cart/Kptfile pipeline.mutators[0]": "v2",
		}},
	}
	for _, tc := range tests {
		t.Run(string(tc.to)+strings.Join(tc.only, ","), func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t)
			rep, err := Upgrade(context.Background(), []string{dir}, Options{Resolver: testResolver(t, releases3...), To: tc.to, Only: tc.only})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, s := range rep.Steps {
				if s.Status == Upgraded {
					got[strings.TrimPrefix(filepath.ToSlash(s.Step), filepath.ToSlash(dir)+"/")] = s.To.Version
				}
				if len(tc.only) > 0 && s.Function != tc.only[0] {
					t.Errorf("--only %v lists %s", tc.only, s.Function)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("upgraded (-want +got):\n%s", d)
			}
		})
	}
}

// Input that cannot be read is an error naming the file, and nothing is written, not even the
// upgrades of the packages that could be read.
func TestUpgradeUnreadableInputChangesNothing(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"bad/Kptfile":            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bad\npipeline:\n  mutators:\n  - image: x\n    entrypoint: y\n",
		"bad/kustomization.yaml": "transformers:\n- [\n",
		"bad/Kptfile ":           "",
	} {
		name = strings.TrimSpace(name)
		t.Run(name+"/"+content[:min(len(content), 10)], func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t)
			if err := os.MkdirAll(filepath.Join(dir, "bad"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			_, err := Upgrade(context.Background(), []string{dir}, Options{Resolver: testResolver(t, releases3...), To: Latest, Write: true})
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), filepath.Join(dir, filepath.FromSlash(name))) {
				t.Errorf("error %v, want ErrInvalidInput naming the file", err)
			}
			if d := cmp.Diff(before, snapshot(t, dir)); d != "" {
				t.Errorf("the tree changed:\n%s", d)
			}
		})
	}
}

func TestUntrustedCatalogIsAnError(t *testing.T) {
	t.Parallel()
	cat := filepath.Join("testdata", "catalogs", "fns-1.0.0.yaml")
	r, err := resolver.New(resolver.Options{Catalogs: []string{cat}, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = List(context.Background(), []string{copyTree(t)}, Options{Resolver: r})
	if !errors.Is(err, resolver.ErrUntrustedCatalog) {
		t.Errorf("error %v, want ErrUntrustedCatalog", err)
	}
}

// Steps whose version cannot be compared say why, and an upgrade leaves them.
func TestStepsThatCannotBeCompared(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "set-labels")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: registry.example.com/other/fn:1.0.0
  - image: registry.example.com/fns/set-labels:latest
  - image: registry.example.com/fns/set-labels:0.9.0
    configPath: labels.yaml
  - image: registry.example.com/fns/set-labels
    tag: "~1.0"
  - exec: ./set-labels
  - configPath: other.yaml
`,
		"labels.yaml": "apiVersion: fn.example.com/v1\nkind: SetLabels\nmetadata:\n  name: l\nlabels:\n  a: b\n",
		"other.yaml":  "apiVersion: fn.example.com/v1\nkind: Unlisted\nmetadata:\n  name: o\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Upgrade(context.Background(), []string{dir}, Options{Resolver: testResolver(t, releases3...), To: Latest, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		status Status
		why    string
	}
	var list []got
	for _, s := range rep.Steps {
		why := s.Note
		for _, r := range s.Reasons {
			why += r.Message
		}
		list = append(list, got{s.Status, why})
	}
	want := []got{
		{Unknown, "no trusted catalog lists registry.example.com/other/fn"},
		{Unknown, `tag "latest" is no version: nothing to compare`},
		{Held, "no trusted catalog lists the version the step runs (0.9.0), so catalog diff has nothing to compare with: trust the catalog that lists it too"},
		{Held, `the step's tag "~1.0" chooses the version when it renders: change the tag to upgrade`},
		{Unknown, "no trusted catalog lists an executable with this sha256"},
		{Unknown, "no trusted catalog lists fn.example.com/Unlisted"},
	}
	if d := cmp.Diff(want, list, cmp.AllowUnexported(got{})); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if len(rep.Files) != 0 {
		t.Errorf("%d files written", len(rep.Files))
	}
}

func TestLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want Level
	}{
		{"v1", "v2", Major}, {"v1beta1", "v1", Minor}, {"v1beta1", "v1beta2", Minor}, {"v2beta1", "v1", Major},
		{"v1", "v2beta1", None}, {"v2", "v1", None}, {"v1", "v1", None}, {"v1", "1", None}, {"v1alpha1", "v1beta1", Minor},
	} {
		if got := kubeLevel(tc.a, tc.b); got != tc.want {
			t.Errorf("kubeLevel(%s, %s) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
	for _, bad := range []string{"v0", "v01", "v1gamma1", "v1beta", "v1beta0", "1", "v", ""} {
		if _, ok := parseKubeVersion(bad); ok {
			t.Errorf("%q read as a Kubernetes version", bad)
		}
	}
}

// A Kustomization that lists catalogs of its own (KEP-2906) resolves its steps through them too,
// after the command line's, trusted as the file writes them.
func TestKustomizationCatalogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	abs, err := filepath.Abs(filepath.Join("testdata", "catalogs"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"kustomization.yaml": "catalogs:\n- " + filepath.Join(abs, "fns-1.0.0.yaml") + "\n- " + filepath.Join(abs, "fns-1.1.0.yaml") + "\ntransformers:\n- annotations.yaml\n",
		"annotations.yaml":   "apiVersion: fn.example.com/v1\nkind: SetAnnotations\nmetadata:\n  name: a\nannotations:\n  a: b\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var asked [][]string
	o := Options{
		// the command line names no catalog
		Resolver: testResolver(t),
		ResolverFor: func(catalogs []string, declared map[string][]string) (*resolver.Resolver, error) {
			asked = append(asked, catalogs)
			return resolver.New(resolver.Options{Catalogs: catalogs, Trusted: catalogs, Declared: declared, CacheDir: "-"})
		},
		To: Latest, Write: true,
	}
	rep, err := Upgrade(context.Background(), []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Steps) != 1 || rep.Steps[0].Status != Upgraded || rep.Steps[0].To.Version != "v2" {
		t.Fatalf("steps %+v", rep.Steps)
	}
	if len(asked) != 1 || len(asked[0]) != 2 {
		t.Errorf("asked for %v, want the two catalogs once", asked)
	}
	o.ResolverFor = nil
	rep, err = List(context.Background(), []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Steps) != 1 || rep.Steps[0].Status != Unknown {
		t.Errorf("without ResolverFor: steps %+v", rep.Steps[0])
	}
}

// A path that is a symbolic link to the packages is walked as the packages; the report names
// them under the path as given.
func TestPathThroughALink(t *testing.T) {
	t.Parallel()
	dir := copyTree(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	rep, err := List(context.Background(), []string{link}, Options{Resolver: testResolver(t, releases3...)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Steps != 9 || !strings.HasPrefix(rep.Steps[0].File, link+string(filepath.Separator)) {
		t.Errorf("%d steps, the first in %s", rep.Summary.Steps, rep.Steps[0].File)
	}
}

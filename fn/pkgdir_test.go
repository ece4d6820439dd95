package fn

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const twoDocs = `# a licence header
apiVersion: v1
kind: ConfigMap
metadata:
  name: a # first
data:
  k: v
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: b
`

func TestReadPackageAnnotations(t *testing.T) {
	t.Parallel()
	dir := fntest.Tree(t, map[string]string{
		"cm.yaml":          twoDocs,
		"sub/deploy.yml":   "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
		"values.yaml":      "replicas: 3\n",
		".hidden/x.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hidden\n",
		"README.md":        "# not yaml\n",
		"fn-config.yaml":   "apiVersion: fn.example.com/v1\nkind: SetNamespace\nnamespace: x\n",
		"sub/.dotfile.yml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dot\n",
	})
	pkg, items, err := ReadPackage(dir, filepath.Join(dir, "fn-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type got struct{ Name, Path, Index, LegacyPath, LegacyIndex string }
	var gots []got
	for _, it := range items {
		a := it.GetAnnotations()
		gots = append(gots, got{it.GetName(), a[kioutil.PathAnnotation], a[kioutil.IndexAnnotation], a[kioutil.LegacyPathAnnotation], a[kioutil.LegacyIndexAnnotation]})
	}
	want := []got{
		{"a", "cm.yaml", "0", "cm.yaml", "0"},
		{"b", "cm.yaml", "1", "cm.yaml", "1"},
		{"d", "sub/deploy.yml", "0", "sub/deploy.yml", "0"},
	}
	if diff := cmp.Diff(want, gots); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"values.yaml"}, pkg.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

// TestReadPackageThroughLink: a symbolic link to the package reads the package it points to, and a
// file to exclude is recognised whichever way it is named; links inside the package are still not
// followed.
func TestReadPackageThroughLink(t *testing.T) {
	t.Parallel()
	real := fntest.Tree(t, map[string]string{
		"cm.yaml":        twoDocs,
		"fn-config.yaml": "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: f\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n",
	})
	if err := os.Symlink("cm.yaml", filepath.Join(real, "inner-link.yaml")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, exclude string
	}{
		{"the directory", real, filepath.Join(real, "fn-config.yaml")},
		{"a link to it", link, filepath.Join(link, "fn-config.yaml")},
		{"a link, the config named by the directory", link, filepath.Join(real, "fn-config.yaml")},
		{"the directory, the config named through the link", real, filepath.Join(link, "fn-config.yaml")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, items, err := ReadPackage(tc.dir, tc.exclude)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, annotation(it, kioutil.PathAnnotation)+" "+it.GetName())
			}
			if diff := cmp.Diff([]string{"cm.yaml a", "cm.yaml b"}, got); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWritePackageRoundTripAndChanges(t *testing.T) {
	t.Parallel()
	dir := fntest.Tree(t, map[string]string{
		"cm.yaml":   twoDocs,
		"gone.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n",
		"same.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: same\n",
	})
	pkg, items, err := ReadPackage(dir)
	if err != nil {
		t.Fatal(err)
	}
	var kept []*yaml.RNode
	for _, it := range items {
		switch it.GetName() {
		case "s":
			continue // deleted by the "function"
		case "b":
			if err := it.PipeE(yaml.SetLabel("team", "blue")); err != nil {
				t.Fatal(err)
			}
		}
		kept = append(kept, it)
	}
	gen, err := yaml.Parse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Generated.One\n")
	if err != nil {
		t.Fatal(err)
	}
	// a namespaced one goes under its namespace, as kyaml's package writer puts it
	genNS, err := yaml.Parse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Generated.Two\n  namespace: shop\n")
	if err != nil {
		t.Fatal(err)
	}
	kept = append(kept, gen, genNS)
	changes, err := pkg.Write(kept)
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, c := range changes {
		changed = append(changed, c.Path+map[bool]string{true: " deleted", false: ""}[c.Delete])
	}
	sort.Strings(changed)
	if diff := cmp.Diff([]string{"cm.yaml", "configmap_Generated.One.yaml", "gone.yaml deleted", "shop/configmap_Generated.Two.yaml"}, changed); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	files := readTree(t, dir)
	wantCM := strings.Replace(twoDocs, "  name: b\n", "  name: b\n  labels:\n    team: 'blue'\n", 1)
	if diff := cmp.Diff(wantCM, files["cm.yaml"]); diff != "" {
		t.Errorf("cm.yaml (-want +got):\n%s", diff)
	}
	if _, ok := files["gone.yaml"]; ok {
		t.Error("gone.yaml was not deleted")
	}
	for name, content := range files {
		if strings.Contains(content, "config.kubernetes.io/") {
			t.Errorf("%s keeps an orchestrator annotation:\n%s", name, content)
		}
	}
}

func TestWritePackageRefusesAndWritesNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(items []*yaml.RNode) []*yaml.RNode
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"path outside", func(items []*yaml.RNode) []*yaml.RNode {
			_ = items[1].PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, "../escape.yaml"))
			return items
		}, nil, "outside the package"},
		{"hidden directory", setPath(".git/config"), nil, `path ".git/config" is hidden (.git)`},
		{"hidden file", setPath("sub/.x.yaml"), nil, `is hidden (.x.yaml)`},
		{"other extension", setPath("scripts/run.sh"), nil, `path "scripts/run.sh" is not a .yaml or .yml file`},
		{"markdown", setPath("notes.md"), nil, "not a .yaml or .yml file"},
		{"skipped file", setPath("values.yaml"), func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "values.yaml"), "replicas: 3\n")
		}, "the package reader skipped that file"},
		{"file not read", setPath("excluded.yaml"), func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "excluded.yaml"), "apiVersion: v1\nkind: X\n")
		}, "exists but the package reader did not read it"},
		{"symlinked file", setPath("ln.yaml"), func(t *testing.T, dir string) {
			if err := os.Symlink("cm.yaml", filepath.Join(dir, "ln.yaml")); err != nil {
				t.Skip("no symlinks here:", err)
			}
		}, "runs through the symbolic link ln.yaml"},
		{"symlink inside", setPath("in/x.yaml"), func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("real", filepath.Join(dir, "in")); err != nil {
				t.Skip("no symlinks here:", err)
			}
		}, "runs through the symbolic link in"},
		{"duplicate path and index", func(items []*yaml.RNode) []*yaml.RNode {
			_ = items[1].PipeE(yaml.SetAnnotation(kioutil.IndexAnnotation, "0"))
			return items
		}, nil, "both have path cm.yaml and index 0"},
		{"index not a number", func(items []*yaml.RNode) []*yaml.RNode {
			_ = items[1].PipeE(yaml.SetAnnotation(kioutil.IndexAnnotation, "one"))
			return items
		}, nil, "not a number"},
		{"symlink out", func(items []*yaml.RNode) []*yaml.RNode {
			_ = items[1].PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, "link/x.yaml"))
			return items
		}, func(t *testing.T, dir string) {
			if err := os.Symlink(t.TempDir(), filepath.Join(dir, "link")); err != nil {
				t.Skip("no symlinks here:", err)
			}
		}, "symbolic link"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := fntest.Tree(t, map[string]string{"cm.yaml": twoDocs})
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			before := readTree(t, dir)
			pkg, items, err := ReadPackage(dir, filepath.Join(dir, "excluded.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			_ = items[0].PipeE(yaml.SetLabel("changed", "yes")) // a change that must not be written
			_, err = pkg.Write(tc.edit(items))
			if !errors.Is(err, ErrInvalidPackage) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "1 (ConfigMap/b)") {
				t.Fatalf("error = %v, want ErrInvalidPackage containing %q", err, tc.want)
			}
			if diff := cmp.Diff(before, readTree(t, dir)); diff != "" {
				t.Errorf("the package changed although the write failed (-before +after):\n%s", diff)
			}
		})
	}
}

func setPath(p string) func(items []*yaml.RNode) []*yaml.RNode {
	return func(items []*yaml.RNode) []*yaml.RNode {
		_ = items[1].PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, p))
		_ = items[1].PipeE(yaml.SetAnnotation(kioutil.LegacyPathAnnotation, p))
		return items
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A path from a generator that starts with "/" is relative to the package root, as in kpt.
func TestWritePackageAbsolutePathIsPackageRelative(t *testing.T) {
	t.Parallel()
	dir := fntest.Tree(t, map[string]string{"cm.yaml": twoDocs})
	pkg, items, err := ReadPackage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pkg.Write(setPath("/sub/abs.yaml")(items)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "abs.yaml")); err != nil {
		t.Errorf("the item did not go to sub/abs.yaml in the package: %v", err)
	}
}

func TestWritePackageKeepsWideSequenceIndent(t *testing.T) {
	t.Parallel()
	wide := "apiVersion: v1\nkind: List\nmetadata:\n  name: l\nitems:\n  - a\n  - b\n"
	dir := fntest.Tree(t, map[string]string{"list.yaml": wide})
	pkg, items, err := ReadPackage(dir)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := pkg.Write(items)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 0 {
		t.Errorf("an unchanged package was rewritten: %+v", changes)
	}
	if got := readTree(t, dir)["list.yaml"]; got != wide {
		t.Errorf("list.yaml = %q, want %q", got, wide)
	}
}

// A file with CRLF line endings keeps its comments and sequence indentation; it is left alone when
// its resources do not change and written with LF (as kpt writes it) when they do.
func TestWritePackageCRLF(t *testing.T) {
	t.Parallel()
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	doc := "# header\n#\napiVersion: v1\nkind: List\nmetadata:\n  name: l # the list\nitems:\n  - a\n  - b\n"
	tests := []struct {
		name   string
		change bool
		want   string
	}{
		{name: "unchanged", want: crlf(doc)},
		{name: "changed", change: true, want: strings.Replace(doc, "# the list\n", "# the list\n  labels:\n    x: z\n", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fntest.Tree(t, map[string]string{"list.yaml": crlf(doc)})
			pkg, items, err := ReadPackage(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tt.change {
				if err := items[0].PipeE(yaml.LookupCreate(yaml.MappingNode, "metadata", "labels"), yaml.SetField("x", yaml.NewScalarRNode("z"))); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := pkg.Write(items); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, readTree(t, dir)["list.yaml"]); d != "" {
				t.Errorf("list.yaml (-want +got):\n%s", d)
			}
		})
	}
}

// Digest(changes) is the digest of the package as read after the changes are written; any
// difference a render reads changes it, what the reader leaves alone does not.
func TestPackageDigest(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"a.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # first\n",
		"sub/b.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
		"kustomization.yaml": "resources: [a.yaml]\n",
		"README.md":          "notes\n",
	}
	digest := func(t *testing.T, files map[string]string) string {
		t.Helper()
		dir := t.TempDir()
		writeTree(t, dir, files)
		pkg, _, err := ReadPackage(dir)
		if err != nil {
			t.Fatal(err)
		}
		return pkg.Digest(nil)
	}
	want := digest(t, base)
	for _, tc := range []struct {
		name string
		edit func(map[string]string)
		same bool
	}{
		{"nothing", func(map[string]string) {}, true},
		{"a file no render reads", func(f map[string]string) { f["README.md"] = "other\n"; f[".hidden.yaml"] = "x: 1\n" }, true},
		{"CRLF line endings", func(f map[string]string) { f["sub/b.yaml"] = strings.ReplaceAll(f["sub/b.yaml"], "\n", "\r\n") }, true},
		{"a comment", func(f map[string]string) { f["a.yaml"] = strings.Replace(f["a.yaml"], "first", "1st", 1) }, false},
		{"a file moved", func(f map[string]string) { f["sub/c.yaml"] = f["sub/b.yaml"]; delete(f, "sub/b.yaml") }, false},
		{"bytes moved between files", func(f map[string]string) {
			f["a.yaml"] += "---\n" + f["sub/b.yaml"]
			f["sub/b.yaml"] = ""
		}, false},
		{"a non-resource file", func(f map[string]string) { f["notes.yaml"] = "x: 1\n" }, false},
	} {
		files := maps.Clone(base)
		tc.edit(files)
		if got := digest(t, files); (got == want) != tc.same {
			t.Errorf("%s: digest unchanged %v, want %v", tc.name, got == want, tc.same)
		}
	}

	// what Plan would write: the digest of the package read again after Apply
	dir := t.TempDir()
	writeTree(t, dir, base)
	pkg, items, err := ReadPackage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := items[0].SetLabels(map[string]string{"x": "y"}); err != nil {
		t.Fatal(err)
	}
	changes, err := pkg.Plan(items[:1])
	if err != nil {
		t.Fatal(err)
	}
	predicted := pkg.Digest(changes)
	if err := pkg.Apply(changes); err != nil {
		t.Fatal(err)
	}
	again, _, err := ReadPackage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if predicted == want || again.Digest(nil) != predicted {
		t.Errorf("after the write: predicted %s (before %s), read %s", predicted, want, again.Digest(nil))
	}
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadPackageFilesOfNoDocumentAsKyaml: a file that holds no YAML document (empty, a newline,
// blank lines, only comments, only `---`) is read as no resources, as kyaml's package reader (kpt's)
// reads it, and not skipped as a file that is not Kubernetes resources; empty documents between
// resources count no index. Writing the package back keeps such a file as it is, as kpt does (it
// deletes only a file whose resources are all gone), and a function may still write into it.
func TestReadPackageFilesOfNoDocumentAsKyaml(t *testing.T) {
	t.Parallel()
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n"
	files := map[string]string{
		"empty.yaml":         "",
		"newline.yaml":       "\n",
		"blank.yml":          "\n  \n\n",
		"comment.yaml":       "# nothing here yet\n",
		"comments.yaml":      "# one\n---\n# two\n",
		"separator.yaml":     "---\n",
		"separators.yaml":    "---\n---\n",
		"null.yaml":          "~\n",
		"between.yaml":       "---\n" + strings.ReplaceAll(cm, "%s", "first") + "---\n---\n# gap\n" + strings.ReplaceAll(cm, "%s", "second") + "---\n",
		"sub/empty.yaml":     "",
		"sub/resource.yaml":  strings.ReplaceAll(cm, "%s", "third"),
		"not-resource.yaml":  "replicas: 3\n",
		"comment-crlf.yaml":  "# windows\r\n",
		"sub/comments.yml":   "# a\n# b\n",
		"sub/deeper/x.yaml":  "---\n",
		"sub/deeper/y.yaml":  strings.ReplaceAll(cm, "%s", "fourth"),
		"sub/deeper/z.yaml":  "# only a comment, no newline at the end",
		"sub/deeper/w.yaml":  "\n---\n\n",
		"sub/deeper/v.yaml":  "--- # a comment on the separator\n",
		"sub/deeper/u.yaml":  "---\n# a comment after it\n",
		"sub/deeper/t.yaml":  "#\n",
		"sub/deeper/s.yaml":  " \n",
		"sub/deeper/q.yaml":  "---\n~\n",
		"sub/deeper/p.yaml":  "null\n",
		"sub/deeper/o.yaml":  "--- null\n",
		"sub/deeper/n.yaml":  "--- ~\n---\n",
		"sub/deeper/j.yaml":  "\n\n# c\n\n",
		"sub/deeper/i.yaml":  "---\n---\n---\n",
		"sub/deeper/h.yaml":  "# c\n---\n",
		"sub/deeper/g.yaml":  "---\n\n",
		"sub/deeper/f.yaml":  "\n#c\n---\n#d\n",
		"sub/deeper/e.yaml":  "--- \n",
		"sub/deeper/d.yaml":  "---\t\n",
		"sub/deeper/c.yaml":  "--- #\n---\n",
		"sub/deeper/b.yaml":  "\n\n\n",
		"sub/deeper/a.yaml":  "# \n# \n",
		"sub/deeper/aa.yaml": "\r\n",
	}
	dir := fntest.Tree(t, files)
	pkg, items, err := ReadPackage(dir)
	if err != nil {
		t.Fatal(err)
	}
	describeAll := func(nodes []*yaml.RNode) []string {
		var out []string
		for _, it := range nodes {
			a := it.GetAnnotations()
			out = append(out, a[kioutil.PathAnnotation]+"#"+a[kioutil.IndexAnnotation]+" "+it.GetName())
		}
		sort.Strings(out)
		return out
	}
	// kyaml's reader, as kpt configures it for a package (every .yaml and .yml file)
	kyamlItems, err := (&kio.LocalPackageReader{PackagePath: dir, MatchFilesGlob: []string{"*.yaml", "*.yml"}, OmitReaderAnnotations: false}).Read()
	if err != nil {
		t.Fatal(err)
	}
	var kyamlKRM []*yaml.RNode
	for _, it := range kyamlItems {
		// kpt refuses what is not KRM, where krm-catalog skips the file: compare the rest
		if it.GetKind() != "" {
			kyamlKRM = append(kyamlKRM, it)
		}
	}
	want := describeAll(kyamlKRM)
	if diff := cmp.Diff(want, describeAll(items)); diff != "" {
		t.Errorf("items against kyaml's LocalPackageReader (-kyaml +krm-catalog):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"between.yaml#0 first", "between.yaml#1 second", "sub/deeper/y.yaml#0 fourth", "sub/resource.yaml#0 third"}, want); diff != "" {
		t.Errorf("kyaml's items (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"not-resource.yaml"}, pkg.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	// written back, the files of no document stay and none is deleted; the file of resources
	// between empty documents is written without them, as kyaml's writer writes it
	changes, err := pkg.Plan(items)
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, c := range changes {
		changed = append(changed, fmt.Sprintf("%s delete=%t", c.Path, c.Delete))
	}
	if diff := cmp.Diff([]string{"between.yaml delete=false"}, changed); diff != "" {
		t.Errorf("writing the package back (-want +got):\n%s", diff)
	}
	// a function may put a resource into an empty file; the others stay
	gen, err := yaml.Parse(strings.ReplaceAll(cm, "%s", "generated"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{kioutil.PathAnnotation, kioutil.IndexAnnotation} {
		v := map[string]string{kioutil.PathAnnotation: "comment.yaml", kioutil.IndexAnnotation: "0"}[k]
		if err := gen.PipeE(yaml.SetAnnotation(k, v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pkg.Write(append(items, gen)); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dir)
	want2 := maps.Clone(files)
	want2["comment.yaml"] = strings.ReplaceAll(cm, "%s", "generated")
	want2["between.yaml"] = strings.ReplaceAll(cm, "%s", "first") + "---\n# gap\n" + strings.ReplaceAll(cm, "%s", "second")
	if diff := cmp.Diff(want2, got); diff != "" {
		t.Errorf("package after writing (-want +got):\n%s", diff)
	}
}

// TestPackageItemsAreThePackageAsRead: Items gives the resources ReadPackage and ReadFile gave,
// in their order and with their annotations, whatever has since been done to those.
func TestPackageItemsAreThePackageAsRead(t *testing.T) {
	t.Parallel()
	dir := fntest.Tree(t, map[string]string{
		"cm.yaml":        twoDocs,
		"sub/deploy.yml": "# a comment\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d # here\n",
		"values.yaml":    "replicas: 3\n",
		"Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: root\n",
	})
	pkg, items, err := ReadPackage(dir)
	if err != nil {
		t.Fatal(err)
	}
	kf, err := pkg.ReadFile("Kptfile")
	if err != nil {
		t.Fatal(err)
	}
	items = append(items, kf...)
	encode := func(items []*yaml.RNode) string {
		var b strings.Builder
		for _, it := range items {
			b.WriteString(it.MustString() + "---\n")
		}
		return b.String()
	}
	want := encode(items)
	for _, it := range items {
		if err := it.SetNamespace("changed"); err != nil {
			t.Fatal(err)
		}
		if err := setAnnotation(it, kioutil.PathAnnotation, "elsewhere.yaml"); err != nil {
			t.Fatal(err)
		}
	}
	again, err := pkg.Items()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, encode(again)); diff != "" {
		t.Errorf("Items (-as read +again):\n%s", diff)
	}
	if got := encode(items); got == want {
		t.Fatal("the items read were not changed: the test proves nothing")
	}
}

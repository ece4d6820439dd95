package functions

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/examples/fnexamples"
	"github.com/krm-catalog/krm-catalog/fn/upgrade"
)

// releaseCatalog is one release of the example functions as a platform team would publish it:
// each version's container image (on a registry nothing listens on: with --runtime exec the
// catalog's executable runs instead, fetched and verified) and the example executables served by
// the test. The releases differ in what they say, not in the executables.
var releaseCatalog = template.Must(template.New("release").Parse(`# release {{.Release}} of the example functions
apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: examples-{{.Release}}
spec:
  krmFunctions:
{{- if .Labels}}
    - group: fn.example.com
      names:
        kind: SetLabels
      description: Adds labels to every resource.
      publisher: example.com
      versions:
{{- range .LabelsVersions}}
        - name: {{.}}
          schema:
            openAPIV3Schema:
              type: object
              required: [labels]
              properties:
                labels:
                  type: object
                  minProperties: 1
                  additionalProperties:
                    type: string
          idempotent: true
          runtime:
            container:
              image: {{$.Registry}}/fns/set-labels:{{$.Labels}}
              sha256: {{call $.Digest "set-labels" $.Labels}}
{{- if $.LabelsNetwork}}
              requireNetwork: true
{{- end}}
            exec:
              platforms:
                - {bin: set-labels, os: {{$.OS}}, arch: {{$.Arch}}, uri: {{$.URL}}/set-labels/{{$.OS}}-{{$.Arch}}/set-labels, sha256: {{index $.SHA "set-labels"}}}
          conformWithSpecVersions: [v1, v2]
{{- end}}
{{- end}}
{{- if .Namespace}}
    - group: fn.example.com
      names:
        kind: SetNamespace
      description: Sets metadata.namespace on every namespaced resource.
      publisher: example.com
      versions:
        - name: v1
          schema:
            openAPIV3Schema:
              type: object
              required: [namespace]
              properties:
                namespace:
                  type: string
                  pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
                  maxLength: {{.NamespaceMax}}
          idempotent: true
          runtime:
            container:
              image: {{.Registry}}/fns/set-namespace:{{.Namespace}}
              sha256: {{call .Digest "set-namespace" .Namespace}}
            exec:
              platforms:
                - {bin: set-namespace, os: {{.OS}}, arch: {{.Arch}}, uri: {{.URL}}/set-namespace/{{.OS}}-{{.Arch}}/set-namespace, sha256: {{index .SHA "set-namespace"}}}
          conformWithSpecVersions: [v1, v2]
{{- end}}
{{- if .Limits}}
    - group: fn.example.com
      names:
        kind: RequireResourceLimits
      description: Validates that every container declares resource limits.
      publisher: example.com
      versions:
        - name: v1
          schema:
            openAPIV3Schema:
              type: object
              properties:
                require:
                  type: array
                  items:
                    type: string
                    enum: [{{.LimitsEnum}}]
          idempotent: true
          runtime:
            container:
              image: {{.Registry}}/fns/require-limits:{{.Limits}}
              sha256: {{call .Digest "require-limits" .Limits}}
            exec:
              platforms:
                - {bin: require-limits, os: {{.OS}}, arch: {{.Arch}}, uri: {{.URL}}/require-limits/{{.OS}}-{{.Arch}}/require-limits, sha256: {{index .SHA "require-limits"}}}
          conformWithSpecVersions: [v1, v2]
{{- end}}
`))

type release struct {
	Release, Registry, URL, OS, Arch string
	SHA                              map[string]string
	Digest                           func(name, tag string) string
	Labels, Namespace, Limits        string // the image tags; "" leaves the function out
	LabelsVersions                   []string
	LabelsNetwork                    bool
	NamespaceMax                     int
	LimitsEnum                       string
}

// The example functions at older versions, upgraded with fn upgrade --to latest against three
// releases of a catalog: the safe upgrades are written pinned by digest, the step whose config the
// new schema refuses and the steps whose upgrade catalog diff finds breaking are left and named,
// fn render of the result runs every function, and a second fn upgrade changes nothing.
func TestUpgradeExampleFunctionsAndRender(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	p := fnexamples.Current()
	shas := map[string]string{}
	for name, path := range bins.Fn {
		sum, err := fnexamples.FileSHA256(path)
		if err != nil {
			t.Fatal(err)
		}
		shas[name] = sum
	}
	registry := "127.0.0.1:1" // never asked: --runtime exec runs the catalog's executable
	base := release{Registry: registry, URL: pub.srv.URL, OS: p.OS, Arch: p.Arch, SHA: shas,
		Digest: func(name, tag string) string { return sha([]byte(name + ":" + tag)) }, NamespaceMax: 63, LimitsEnum: "cpu, memory, ephemeral-storage"}
	releases := []release{base, base, base}
	releases[0].Release, releases[0].Labels, releases[0].Namespace, releases[0].Limits, releases[0].LabelsVersions = "1.0.0", "1.0.0", "1.0.0", "1.0.0", []string{"v1"}
	// 1.1.0: set-labels and require-limits safe, and SetLabels v2; set-namespace accepts 8
	// characters at most, which catalog diff does not compare (only the schema check sees it)
	releases[1].Release, releases[1].Labels, releases[1].Namespace, releases[1].Limits, releases[1].LabelsVersions = "1.1.0", "1.1.0", "1.1.0", "1.1.0", []string{"v1", "v2"}
	releases[1].NamespaceMax = 8
	// 2.0.0, breaking: set-labels' container needs the network; require-limits no longer accepts
	// ephemeral-storage. The configs still validate: only catalog diff refuses them.
	releases[2].Release, releases[2].Labels, releases[2].Limits, releases[2].LabelsVersions = "2.0.0", "2.0.0", "2.0.0", []string{"v1", "v2"}
	releases[2].LabelsNetwork, releases[2].LimitsEnum = true, "cpu, memory"
	dir := t.TempDir()
	var catalogFlags []string
	for _, r := range releases {
		var b bytes.Buffer
		if err := releaseCatalog.Execute(&b, r); err != nil {
			t.Fatal(err)
		}
		cat := writeFile(t, dir, "catalogs/examples-"+r.Release+".yaml", b.String())
		catalogFlags = append(catalogFlags, "--catalog", cat, "--trusted-catalog", cat)
	}
	catalogFlags = append(catalogFlags, "--cache-dir", filepath.Join(dir, "cache"))

	pkgs := filepath.Join(dir, "packages")
	local := "  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
	writeFile(t, pkgs, "shop/Kptfile", `# the shop, as it was tested
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: shop
  annotations:
    config.kubernetes.io/local-config: "true"
pipeline:
  mutators:
    - image: `+registry+`/fns/set-labels:1.0.0 # team labels
      configPath: labels.yaml
    - name: namespace
      image: "`+registry+`/fns/set-namespace:1.0.0"
      configPath: namespace.yaml
  validators:
    - {image: `+registry+`/fns/require-limits:1.0.0, configPath: limits.yaml}
`)
	writeFile(t, pkgs, "shop/labels.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nmetadata:\n  name: team\n"+local+"labels:\n  team: blue\n")
	writeFile(t, pkgs, "shop/namespace.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns\n"+local+"namespace: production\n")
	writeFile(t, pkgs, "shop/limits.yaml", "apiVersion: fn.example.com/v1\nkind: RequireResourceLimits\nmetadata:\n  name: limits\n"+local+"require: [cpu, memory]\n")
	writeFile(t, pkgs, "shop/deployment.yaml", deployment)
	writeFile(t, pkgs, "shop/cart/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: cart\n"+local+"pipeline:\n  mutators:\n  - configPath: owner.yaml # by kind\n")
	writeFile(t, pkgs, "shop/cart/owner.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nmetadata:\n  name: owner\n"+local+"labels:\n  owner: cart\n")
	writeFile(t, pkgs, "shop/cart/service.yaml", service)
	// web's validator is at 1.1.0 already: the only newer version is breaking, and it stays
	writeFile(t, pkgs, "web/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\n"+local+"pipeline:\n  mutators:\n  - image: "+registry+"/fns/set-namespace:1.0.0\n    configPath: namespace.yaml\n  validators:\n  - image: "+registry+"/fns/require-limits:1.1.0 # checked\n    configPath: limits.yaml\n")
	writeFile(t, pkgs, "web/limits.yaml", "apiVersion: fn.example.com/v1\nkind: RequireResourceLimits\nmetadata:\n  name: limits\n"+local+"require: [cpu, memory]\n")
	writeFile(t, pkgs, "web/namespace.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns\n"+local+"namespace: web\n")
	writeFile(t, pkgs, "web/service.yaml", service)

	env := append([]string{"KRM_FN_RUNTIME=no-container-engine-here"}, pub.env...)
	krm := func(args ...string) output {
		t.Helper()
		return run{env: env}.krm(t, append(args, catalogFlags...)...)
	}
	render := func(pkg string) {
		t.Helper()
		if out := krm("fn", "render", filepath.Join(pkgs, pkg), "--runtime", "exec"); out.code != 0 {
			t.Fatalf("fn render %s:\n%s", pkg, out)
		}
	}
	// the packages render at their old versions
	render("shop")
	render("web")

	out := krm("fn", "outdated", pkgs, "--format", "json", "--fail-on", "outdated")
	if out.code != 1 {
		t.Fatalf("fn outdated --fail-on outdated: want exit 1\n%s", out)
	}
	type row struct{ Step, Current, Newest, Available, Status, To string }
	rowsOf := func(out output) []row {
		t.Helper()
		var rep upgrade.Report
		if err := json.Unmarshal([]byte(out.stdout), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var rows []row
		for _, s := range rep.Steps {
			r := row{Step: strings.TrimPrefix(s.Step, pkgs+"/"), Available: string(s.Available), Status: string(s.Status)}
			for _, v := range []struct {
				from *upgrade.Version
				to   *string
			}{{s.Current, &r.Current}, {s.Newest, &r.Newest}, {s.To, &r.To}} {
				if v.from != nil {
					*v.to = v.from.Version
				}
			}
			rows = append(rows, r)
		}
		return rows
	}
	wantOutdated := []row{
		{"shop/Kptfile pipeline.mutators[0]", "1.0.0", "2.0.0", "major", "outdated", ""},
		{"shop/Kptfile pipeline.mutators[1]", "1.0.0", "1.1.0", "minor", "outdated", ""},
		{"shop/Kptfile pipeline.validators[0]", "1.0.0", "2.0.0", "major", "outdated", ""},
		{"shop/cart/Kptfile pipeline.mutators[0]", "v1", "v2", "major", "outdated", ""},
		{"web/Kptfile pipeline.mutators[0]", "1.0.0", "1.1.0", "minor", "outdated", ""},
		{"web/Kptfile pipeline.validators[0]", "1.1.0", "2.0.0", "major", "outdated", ""},
	}
	if d := cmp.Diff(wantOutdated, rowsOf(out)); d != "" {
		t.Errorf("fn outdated (-want +got):\n%s", d)
	}

	before := snapshot(t, pkgs)
	out = krm("fn", "upgrade", pkgs, "--to", "latest", "--format", "json")
	if out.code != 0 {
		t.Fatal(out)
	}
	wantUpgrade := []row{
		{"shop/Kptfile pipeline.mutators[0]", "1.0.0", "2.0.0", "major", "upgraded", "1.1.0"},
		{"shop/Kptfile pipeline.mutators[1]", "1.0.0", "1.1.0", "minor", "held", ""},
		{"shop/Kptfile pipeline.validators[0]", "1.0.0", "2.0.0", "major", "upgraded", "1.1.0"},
		{"shop/cart/Kptfile pipeline.mutators[0]", "v1", "v2", "major", "upgraded", "v2"},
		{"web/Kptfile pipeline.mutators[0]", "1.0.0", "1.1.0", "minor", "upgraded", "1.1.0"},
		{"web/Kptfile pipeline.validators[0]", "1.1.0", "2.0.0", "major", "held", ""},
	}
	if d := cmp.Diff(wantUpgrade, rowsOf(out)); d != "" {
		t.Errorf("fn upgrade (-want +got):\n%s", d)
	}
	for _, want := range []string{
		// the config the new schema refuses, at its line
		`"kind": "schema"`, `functionConfig field namespace: namespace: length must be <= 8, got 10`, `"file": "` + filepath.Join(pkgs, "shop", "namespace.yaml") + `",` + "\n" + `          "line": 7`,
		// the breaking changes, named
		`"kind": "requirement-added"`, `"kind": "enum-narrowed"`,
	} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("the report does not say %q:\n%s", want, out.stdout)
		}
	}
	d := func(name, tag string) string { return base.Digest(name, tag) }
	// the pipeline's steps, not the status the last render wrote
	wantKptfile := strings.Replace(before["shop/Kptfile"], registry+"/fns/set-labels:1.0.0", registry+"/fns/set-labels:1.1.0@sha256:"+d("set-labels", "1.1.0"), 1)
	wantKptfile = strings.Replace(wantKptfile, registry+"/fns/require-limits:1.0.0", registry+"/fns/require-limits:1.1.0@sha256:"+d("require-limits", "1.1.0"), 1)
	after := snapshot(t, pkgs)
	if diff := cmp.Diff(wantKptfile, after["shop/Kptfile"]); diff != "" {
		t.Errorf("shop/Kptfile (-want +got):\n%s", diff)
	}
	if want := strings.Replace(before["shop/cart/owner.yaml"], "fn.example.com/v1", "fn.example.com/v2", 1); after["shop/cart/owner.yaml"] != want {
		t.Errorf("shop/cart/owner.yaml:\n%s", after["shop/cart/owner.yaml"])
	}
	if !strings.Contains(after["web/Kptfile"], registry+"/fns/require-limits:1.1.0 # checked\n") {
		t.Errorf("web's validator, held, changed:\n%s", after["web/Kptfile"])
	}
	var changed []string
	for name := range after {
		if after[name] != before[name] {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	if diff := cmp.Diff([]string{"shop/Kptfile", "shop/cart/owner.yaml", "web/Kptfile"}, changed); diff != "" {
		t.Errorf("files changed (-want +got):\n%s", diff)
	}

	render("shop")
	render("web")
	rendered := snapshot(t, pkgs)
	for file, want := range map[string]string{
		"shop/deployment.yaml":   "team: blue",
		"shop/cart/service.yaml": "owner: cart",
		"web/service.yaml":       "namespace: web",
	} {
		if !strings.Contains(rendered[file], want) {
			t.Errorf("%s after render does not hold %q:\n%s", file, want, rendered[file])
		}
	}

	// a second upgrade changes nothing
	out = krm("fn", "upgrade", pkgs, "--to", "latest")
	if out.code != 0 || !strings.Contains(out.stdout, "0 upgraded, 4 held") || !strings.Contains(out.stdout, "0 file(s) written") {
		t.Errorf("a second fn upgrade:\n%s", out)
	}
	if diff := cmp.Diff(rendered, snapshot(t, pkgs)); diff != "" {
		t.Errorf("a second fn upgrade changed the packages:\n%s", diff)
	}
}

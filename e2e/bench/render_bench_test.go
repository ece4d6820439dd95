package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

const (
	renderFiles   = 50
	renderPerFile = 20 // 10 Deployments, 5 Services, 5 ConfigMaps
)

// renderSteps are the three public functions and their configs, as the Kptfile names them.
var renderSteps = []struct{ fn, key, value string }{
	{"set-namespace", "namespace", "prod"},
	{"set-labels", "tier", "web"},
	{"set-annotations", "owner", "team-blue"},
}

// resource is the j-th resource of file f, as written in the package: Deployments with comments,
// Services, ConfigMaps.
func resource(f, j int) string {
	n := f*renderPerFile + j
	switch {
	case j < 10:
		return fmt.Sprintf(`# web tier %[1]d: the public face
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-%[1]d # one per shard
  labels:
    app: web-%[1]d
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web-%[1]d
  template:
    metadata:
      labels:
        app: web-%[1]d
    spec:
      containers:
      - name: web
        image: "registry.example.com/web:1.25" # pinned
        args: ["--port=8080", 'verbose']
        ports:
        - containerPort: 8080
        resources:
          limits: {cpu: 500m, memory: 128Mi}
`, n)
	case j < 15:
		return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: web-%[1]d
spec:
  selector:
    app: web-%[1]d
  ports:
  - port: 80
    targetPort: 8080 # the container's port
`, n)
	default:
		return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: settings-%[1]d
data:
  mode: production
  level: "3"
  script: |
    #!/bin/sh
    exec web --shard=%[1]d
`, n)
	}
}

// renderPackage writes the 1,000-resource package into dir with a Kptfile running the three
// functions (executables in peers) as exec steps, and returns the same resources as the
// ResourceList kpt sends the first step, for the bare chain: the Kptfile first, then the
// resources, each with its path and index annotations. The Kptfile is a resource of the package
// and both renders send it to every step; set-annotations pays for it (its kind is not in kyaml's
// precomputed scopes, so kyaml loads its whole OpenAPI schema), and a chain without it would be
// doing less work than either render.
func renderPackage(b *testing.B, dir string, exes map[string]string) []byte {
	b.Helper()
	var kf strings.Builder
	kf.WriteString("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bench\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\npipeline:\n  mutators:\n")
	for _, s := range renderSteps {
		fmt.Fprintf(&kf, "    - exec: %s\n      configMap:\n        %s: %s\n", exes[s.fn], s.key, s.value)
	}
	writeFile(b, filepath.Join(dir, "Kptfile"), kf.String())
	var rl strings.Builder
	rl.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	rl.WriteString(listItem(strings.Replace(kf.String(), "\"true\"\n", "\"true\"\n    config.kubernetes.io/index: '0'\n    config.kubernetes.io/path: 'Kptfile'\n    internal.config.kubernetes.io/index: '0'\n    internal.config.kubernetes.io/path: 'Kptfile'\n", 1)))
	for f := range renderFiles {
		var file strings.Builder
		rel := fmt.Sprintf("apps/shard-%02d.yaml", f)
		for j := range renderPerFile {
			r := resource(f, j)
			if j > 0 {
				file.WriteString("---\n")
			}
			file.WriteString(r)
			ann := fmt.Sprintf("  annotations:\n    config.kubernetes.io/index: '%[1]d'\n    config.kubernetes.io/path: '%[2]s'\n    internal.config.kubernetes.io/index: '%[1]d'\n    internal.config.kubernetes.io/path: '%[2]s'\n", j, rel)
			r = strings.Replace(r, "\nspec:\n", "\n"+ann+"spec:\n", 1)
			r = strings.Replace(r, "\ndata:\n", "\n"+ann+"data:\n", 1)
			rl.WriteString(listItem(r))
		}
		writeFile(b, filepath.Join(dir, rel), file.String())
	}
	return []byte(rl.String())
}

// listItem indents a resource as an item of a block sequence.
func listItem(r string) string {
	var b strings.Builder
	first := true
	for _, line := range strings.SplitAfter(r, "\n") {
		switch {
		case line == "":
		case first && !strings.HasPrefix(line, "#"):
			b.WriteString("- " + line)
			first = false
		default:
			b.WriteString("  " + line)
		}
	}
	return b.String()
}

// withConfig gives the ResourceList the ConfigMap kpt builds from a step's configMap.
func withConfig(rl []byte, key, value string) []byte {
	cfg := fmt.Sprintf("functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: function-input\n  data:\n    %s: %s\n", key, value)
	// a function writes the list back with the config it was given: cut it out
	if bytes.HasPrefix(rl, []byte("functionConfig:\n")) {
		rl = append([]byte("\n"), rl...)
	}
	if i := bytes.Index(rl, []byte("\nfunctionConfig:\n")); i >= 0 {
		end := i + len("\nfunctionConfig:\n")
		for end < len(rl) && (rl[end] == ' ' || rl[end] == '\n') {
			next := bytes.IndexByte(rl[end:], '\n')
			if next < 0 {
				end = len(rl)
				break
			}
			end += next + 1
		}
		rl = append(rl[:i+1:i+1], rl[end:]...)
	}
	return append([]byte(cfg), rl...)
}

func writeFile(b *testing.B, p, s string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRenderVsKptVsChain: `krm-catalog fn render --allow-exec` of a package of 1,000
// resources (Deployments with comments, Services, ConfigMaps in 50 files) through three public
// functions of kptdev/krm-functions-catalog as exec steps, against `kpt fn render --allow-exec` of
// the same package (kpt main, built from source) and against the bare chain: the three function
// processes run by hand, one after the other, over the same ResourceList. Whole processes: CPU
// (user and system, the functions' processes included), wall time and peak resident memory (the
// chain's largest process); medians of rounds run turn by turn (the order turns each round), on
// fresh copies of the package.
//
// Targets: x-chain-cpu at most 1.15, x-kpt-cpu at most 0.2.
//
//	e2e/bench/build-peers.sh
//	go test ./e2e/bench -run '^$' -bench RenderVsKptVsChain -benchtime 1x -count 1 # KRM_CATALOG_BENCH_ROUNDS=7
func BenchmarkRenderVsKptVsChain(b *testing.B) {
	exes := map[string]string{}
	for _, s := range renderSteps {
		exes[s.fn] = peer(b, s.fn)
	}
	kpt := peer(b, "kpt")
	src := b.TempDir()
	list := renderPackage(b, src, exes)
	cache := b.TempDir()
	ours := func() sample {
		dir := filepath.Join(b.TempDir(), "pkg")
		testenv.CopyTree(b, src, dir)
		return proc(b, nil, io.Discard, "", bins.KrmCatalog, "fn", "render", dir, "--allow-exec", "--cache-dir", cache)
	}
	theirs := func() sample {
		dir := filepath.Join(b.TempDir(), "pkg")
		testenv.CopyTree(b, src, dir)
		return proc(b, nil, io.Discard, "", kpt, "fn", "render", dir, "--allow-exec")
	}
	chain := func() sample {
		var total sample
		rl := list
		for _, s := range renderSteps {
			var out bytes.Buffer
			total = total.plus(proc(b, withConfig(rl, s.key, s.value), &out, "", exes[s.fn]))
			rl = out.Bytes()
		}
		if !bytes.Contains(rl, []byte("namespace: prod")) || !bytes.Contains(rl, []byte("owner: team-blue")) || !bytes.Contains(rl, []byte("kind: Kptfile")) {
			b.Fatalf("the chain did not set the namespace and annotation, or lost the Kptfile:\n%.2000s", rl)
		}
		return total
	}
	// the first of each fills caches (the page cache, krm-catalog's), which are not what is measured
	ours()
	theirs()
	chain()
	var render, kptRender, bare series
	for b.Loop() {
		for i := range rounds(b) {
			turn := []func(){
				func() { render = append(render, ours()) },
				func() { kptRender = append(kptRender, theirs()) },
				func() { bare = append(bare, chain()) },
			}
			for k := range turn {
				turn[(i+k)%len(turn)]()
			}
		}
	}
	render.report(b, "render")
	kptRender.report(b, "kpt")
	bare.report(b, "chain")
	render.ratios(b, bare, "chain")
	render.ratios(b, kptRender, "kpt")
}

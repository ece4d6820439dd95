package functions

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

// BenchmarkBuildVsKustomize (docs/benchmarks.md, "kustomize build with catalogs"): the same
// kustomization, 300 Deployments through three exec functions (the example set-namespace, three
// configs), built by `krm-catalog build` with the functions named by kind through a catalog, and by
// `kustomize build --enable-alpha-plugins --enable-exec` with each config's
// config.kubernetes.io/function annotation naming the same executable. Both run turn by turn in
// the same run; the ratio is krm-catalog's time over kustomize's. Target: at most 0.5.
//
//	go test ./e2e/functions -run '^$' -bench BuildVsKustomize -benchtime 1x -count 3
func BenchmarkBuildVsKustomize(b *testing.B) {
	const deployments, rounds = 300, 3
	kustomize := fntest.Kustomize(b)
	pub := publish(b, nil)
	root := b.TempDir()
	var res strings.Builder
	for i := range deployments {
		fmt.Fprintf(&res, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%[1]d
  labels:
    app: app-%[1]d
spec:
  replicas: 3
  selector:
    matchLabels:
      app: app-%[1]d
  template:
    metadata:
      labels:
        app: app-%[1]d
    spec:
      containers:
      - name: app
        image: registry.example.com/app:v%[1]d
        ports:
        - containerPort: 8080
        resources:
          limits: {cpu: 500m, memory: 128Mi}
`, i)
	}
	setNamespace := bins.Fn["set-namespace"]
	for _, d := range []string{"catalog", "kustomize"} {
		writeFile(b, root, d+"/deployments.yaml", res.String())
		kust := "resources:\n- deployments.yaml\ntransformers:\n"
		if d == "catalog" {
			kust = "catalogs:\n- catalog.yaml\n" + kust
			writeFile(b, root, d+"/catalog.yaml", readFile(b, pub.catalog))
		}
		for i := 1; i <= 3; i++ {
			cfg := fmt.Sprintf("apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns%d\n", i)
			if d == "kustomize" {
				cfg += fmt.Sprintf("  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: %s\n", setNamespace)
			}
			cfg += fmt.Sprintf("namespace: step-%d\n", i)
			writeFile(b, root, fmt.Sprintf("%s/ns%d.yaml", d, i), cfg)
			kust += fmt.Sprintf("- ns%d.yaml\n", i)
		}
		writeFile(b, root, d+"/kustomization.yaml", kust)
	}
	cache := b.TempDir()
	krm := func() []byte {
		return runTimed(b, pub.env, root, bins.KrmCatalog, "build", "catalog", "--trusted-catalog", "catalog/catalog.yaml", "--cache-dir", cache)
	}
	kus := func() []byte {
		return runTimed(b, nil, root, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", filepath.Join(root, "kustomize"))
	}
	// the first build fetches the executable into the cache; both must print the same
	if a, k := krm(), kus(); string(a) != string(k) {
		b.Fatalf("the outputs differ:\nkrm-catalog:\n%.2000s\nkustomize:\n%.2000s", a, k)
	}
	b.ResetTimer()
	for range b.N {
		var tk, tz time.Duration
		for range rounds {
			start := time.Now()
			krm()
			tk += time.Since(start)
			start = time.Now()
			kus()
			tz += time.Since(start)
		}
		b.ReportMetric(float64(tk.Milliseconds())/rounds, "krm-ms/build")
		b.ReportMetric(float64(tz.Milliseconds())/rounds, "kustomize-ms/build")
		b.ReportMetric(float64(tk)/float64(tz), "x-of-kustomize")
	}
}

func runTimed(b *testing.B, env []string, dir, bin string, args ...string) []byte {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cmd.Environ(), env...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		b.Fatalf("%s %v: %v\n%s", bin, args, err, stderr)
	}
	return out
}

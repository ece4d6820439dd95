package functions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/status"

	"github.com/krm-catalog/krm-catalog/examples/fnexamples"
	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
)

// porchPrefix is what Porch puts before an image name without a slash (kpt's
// runneroptions.GHCRImagePrefix): data about Porch, never contacted.
const porchPrefix = "ghcr.io/kptdev/krm-functions-catalog"

// porchFunction is a function of testdata/porch/fns as a catalog lists it.
type porchFunction struct {
	kind, image, pkg string
}

// buildPorchFns builds testdata/porch/fns: the public kpt functions Porch itself depends on, from
// their modules at the versions it pins, and an SDK validator. The executables land in a cache
// directory under their digests (nothing is fetched), and a catalog lists fns by image.
func buildPorchFns(t *testing.T, fns []porchFunction) (catalog, cache string) {
	t.Helper()
	bin := t.TempDir()
	args := []string{"build", "-trimpath", "-o", bin + string(filepath.Separator)}
	for _, f := range fns {
		args = append(args, f.pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("testdata", "porch", "fns")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOWORK=off") // a module of its own, outside the tree's go.work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build testdata/porch/fns (its modules come from the Go module proxy): %v\n%s", err, out)
	}
	cache = t.TempDir()
	var cat strings.Builder
	cat.WriteString("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata: {name: porch-functions}\nspec:\n  krmFunctions:\n")
	p := fnexamples.Current()
	for _, f := range fns {
		name := filepath.Base(f.pkg)
		data, err := os.ReadFile(filepath.Join(bin, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha(data)
		writeFile(t, filepath.Join(cache, "exec", sum), name, string(data))
		if err := os.Chmod(filepath.Join(cache, "exec", sum, name), 0o755); err != nil {
			t.Fatal(err)
		}
		// the image's digest is never asked for: what runs is the exec runtime
		imageDigest := sha256.Sum256([]byte(f.image))
		fmt.Fprintf(&cat, "    - group: fn.kpt.dev\n      names: {kind: %s}\n      description: %s, built from its module.\n      publisher: kpt.dev\n", f.kind, name)
		fmt.Fprintf(&cat, "      versions:\n        - name: v1\n          runtime:\n            container: {image: %q, sha256: %s}\n", f.image, hex.EncodeToString(imageDigest[:]))
		fmt.Fprintf(&cat, "            exec:\n              platforms:\n                - {bin: %s, os: %s, arch: %s, uri: \"https://unused.example.com/%s\", sha256: %s}\n", name, p.OS, p.Arch, name, sum)
	}
	return writeFile(t, t.TempDir(), "catalog.yaml", cat.String()), cache
}

// TestPorchRequests sends fn serve the requests Porch's render path sent for the packages of
// testdata/porch/packages (recorded from nephio-project/porch at 74d82d5: its packagerevision
// renderer over engine.NewMultiFunctionRuntime, dialing its own function runner's executable
// evaluator; testdata/porch/README.md), and holds each answer to the one Porch's runner gave, byte
// for byte, for the same executables: set-namespace named by its short name, starlark and the
// validator listed in the catalog, apply-replacements known only to the fallback (a second fn serve
// stands for Porch's runner, as it runs the same executable the same way).
func TestPorchRequests(t *testing.T) {
	t.Parallel()
	const mod = "github.com/kptdev/krm-functions-catalog/functions/go/"
	catalog, cache := buildPorchFns(t, []porchFunction{
		{"SetNamespace", "set-namespace:v0.4.5", mod + "set-namespace"},
		{"Starlark", porchPrefix + "/starlark:v0.5.5", mod + "starlark"},
		{"RequireTeam", porchPrefix + "/require-team:v1.0.0", "./require-team"},
	})
	fbCatalog, fbCache := buildPorchFns(t, []porchFunction{{"ApplyReplacements", porchPrefix + "/apply-replacements:v0.1.5", mod + "apply-replacements"}})
	behind := startFnServeCatalog(t, fbCatalog, nil, "--cache-dir", fbCache)
	front := startFnServeCatalog(t, catalog, nil, "--cache-dir", cache, "--fallback", behind.addr)
	client := evaluatorpb.NewFunctionEvaluatorClient(front.dial(t))

	calls, err := filepath.Glob(filepath.Join("testdata", "porch", "requests", "*", "*"))
	if err != nil || len(calls) == 0 {
		t.Fatalf("no recorded requests: %v", err)
	}
	for _, dir := range calls {
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			image := strings.TrimSpace(readFile(t, filepath.Join(dir, "image")))
			req := &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(readFile(t, filepath.Join(dir, "request.yaml")))}
			resp, err := client.EvaluateFunction(context.Background(), req)
			if want, ferr := os.ReadFile(filepath.Join(dir, "status")); ferr == nil {
				code, _, _ := strings.Cut(string(want), "\n")
				if got := status.Code(err).String(); got != code {
					t.Fatalf("%v, want %s as Porch's runner answered (%s)", err, code, want)
				}
				// Porch shows its user the message alone: unlike its own runner's, it names each finding
				findings, _ := os.ReadFile(filepath.Join(dir, "findings"))
				for _, f := range strings.Split(strings.TrimSpace(string(findings)), "\n") {
					if f != "" && !strings.Contains(status.Convert(err).Message(), f) {
						t.Errorf("the message does not name the finding %q:\n%s", f, status.Convert(err).Message())
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", image, err)
			}
			if diff := cmp.Diff(readFile(t, filepath.Join(dir, "response.yaml")), string(resp.GetResourceList())); diff != "" {
				t.Errorf("%s: the answer differs from Porch's runner's (-Porch +fn serve):\n%s", image, diff)
			}
			if diff := cmp.Diff(readFile(t, filepath.Join(dir, "log")), string(resp.GetLog())); diff != "" {
				t.Errorf("%s: the log differs from Porch's runner's (-Porch +fn serve):\n%s", image, diff)
			}
		})
	}
	if front.metric(t, "krm_catalog_evaluator_calls_total", `route="fallback"`, `code="OK"`, "} 2") == "" {
		t.Errorf("apply-replacements did not go to the fallback twice:\n%s", front.metric(t, "krm_catalog_evaluator_calls_total"))
	}
}

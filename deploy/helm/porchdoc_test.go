package helm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
)

// yamlBlock is a fenced YAML block of a Markdown page.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestPorchDocManifests renders every manifest docs/porch.md shows and checks it as the chart's are
// checked: Kubernetes' schema, and for each workload non-root, a read-only root with a writable
// /tmp and TMPDIR, no privilege escalation or capabilities, probes, memory limits; the krm-catalog
// command lines they run (fn serve, the fn health probe) must parse.
func TestPorchDocManifests(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "porch.md"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []object
	for _, m := range yamlBlock.FindAllSubmatch(page, -1) {
		for _, o := range decode(t, string(m[1])) {
			if o.kind() != "" { // a Kptfile fragment: not a manifest
				objs = append(objs, o)
			}
		}
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.kind()]++
		problems, err := checkSchema(o.m)
		if err != nil {
			t.Error(err)
		}
		for _, p := range problems {
			t.Errorf("docs/porch.md: %s %s%s", o.kind(), o.name(), p)
		}
		var podSpec any
		switch o.kind() {
		case "Deployment":
			podSpec = o.get("spec", "template", "spec")
			if got := o.get("spec", "strategy", "rollingUpdate", "maxUnavailable"); got != 0 {
				t.Errorf("%s: a rollout may take a ready pod away first (maxUnavailable %v)", o.name(), got)
			}
		case "Pod":
			podSpec = o.get("spec")
		default:
			continue
		}
		checkDocPod(t, o.kind()+" "+o.name(), object{m: map[string]any{"spec": podSpec}})
	}
	for _, k := range []string{"Deployment", "Service", "NetworkPolicy", "PodDisruptionBudget", "Pod"} {
		if kinds[k] == 0 {
			t.Errorf("docs/porch.md shows no %s", k)
		}
	}
}

func checkDocPod(t *testing.T, name string, pod object) {
	t.Helper()
	if pod.get("spec", "securityContext", "runAsNonRoot") != true {
		t.Errorf("%s: not runAsNonRoot", name)
	}
	if pod.get("spec", "automountServiceAccountToken") != false {
		t.Errorf("%s: mounts a service account token", name)
	}
	checkWritableTmp(t, name, pod.get("spec"))
	for i := 0; pod.get("spec", "containers", i) != nil; i++ {
		c := []any{"spec", "containers", i}
		sc := append(slices.Clone(c), "securityContext")
		if pod.get(append(slices.Clone(sc), "readOnlyRootFilesystem")...) != true || pod.get(append(slices.Clone(sc), "allowPrivilegeEscalation")...) != false ||
			!slices.Contains(pod.strings(append(slices.Clone(sc), "capabilities", "drop")...), "ALL") {
			t.Errorf("%s: container securityContext %v", name, pod.get(sc...))
		}
		if pod.get(append(slices.Clone(c), "resources", "limits", "memory")...) == nil {
			t.Errorf("%s: no memory limit", name)
		}
		args := pod.strings(append(slices.Clone(c), "args")...)
		checkCommandLine(t, name, args)
		for _, p := range []string{"readinessProbe", "livenessProbe"} {
			probe := append(slices.Clone(c), p)
			switch {
			case pod.get(append(slices.Clone(probe), "grpc", "port")...) != nil:
			case pod.get(append(slices.Clone(probe), "exec", "command")...) != nil:
				command := pod.strings(append(slices.Clone(probe), "exec", "command")...)
				if len(command) < 3 || command[0] != "/krm-catalog" || command[1] != "fn" || command[2] != "health" {
					t.Errorf("%s: %s runs %v: the image holds /krm-catalog and nothing else", name, p, command)
				}
				checkCommandLine(t, name+" "+p, command[1:])
			default:
				t.Errorf("%s: no %s (grpc or an exec of krm-catalog fn health)", name, p)
			}
		}
	}
}

// checkCommandLine parses a krm-catalog command line as the binary would (with --help, so that
// nothing runs): an unknown flag or a bad value fails.
func checkCommandLine(t *testing.T, name string, args []string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cmd.Main(context.Background(), append(slices.Clone(args), "--help"), cmd.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr}); code != 0 {
		t.Errorf("%s: krm-catalog %s: exit %d\n%s", name, strings.Join(args, " "), code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "Usage:") {
		t.Errorf("%s: krm-catalog %s --help printed no usage: %s", name, strings.Join(args, " "), fmt.Sprint(stdout.String()))
	}
}

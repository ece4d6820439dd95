// Package helm holds the test of the Helm chart in krm-catalog/: helm lint, helm template, the
// rendered manifests checked against Kubernetes' OpenAPI schema (the one kyaml carries; no
// network), and the hardening the chart promises.
package helm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

const chart = "krm-catalog"

// kubeVersion is the Kubernetes the chart is linted and rendered for: stated rather than taken from
// the helm binary, whose default depends on how it was built (a `go install` says v1.20).
const kubeVersion = "v1.31.0"

// helmBinary finds helm where .ci/tools.sh builds it, or on PATH.
func helmBinary(t *testing.T) string {
	t.Helper()
	var dirs []string
	if d := os.Getenv("KRM_CATALOG_TOOLS_BIN"); d != "" {
		dirs = append(dirs, d)
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache", "krm-catalog-ci", "bin"))
	}
	for _, d := range dirs {
		if p := filepath.Join(d, "helm"); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	testenv.Missing(t, "helm", "build it with .ci/tools.sh (go install helm.sh/helm/v3/cmd/helm@v3.22.0)")
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func runHelm(t *testing.T, helm string, args ...string) (string, error) {
	t.Helper()
	if len(args) > 0 && (args[0] == "lint" || args[0] == "template") {
		args = append([]string{args[0], "--kube-version", kubeVersion}, args[1:]...)
	}
	cmd := exec.Command(helm, args...)
	// no repositories, no plugins, no cache of the user's
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// full turns on everything optional.
var full = []string{
	"--set", "database.existingSecret=krm-catalog-db",
	"--set", "registry.prefix=registry.example.com/krm",
	"--set", "registry.credentialsSecret=registry-push",
	"--set", "autoscaling.enabled=true",
	"--set", "ingress.enabled=true",
	"--set", "ingress.tls[0].secretName=catalog-tls",
	"--set", "ingress.tls[0].hosts[0]=catalog.example.com",
	"--set", "serviceMonitor.enabled=true",
	"--set", "networkPolicy.from[0].namespaceSelector.matchLabels.name=ingress",
	"--set", "evaluator.enabled=true",
	"--set", "evaluator.catalogs[0]=oci://registry.example.com/krm/catalogs/platform:v1.4.0",
	"--set", "evaluator.keySecret=catalog-signing-key",
	"--set", "evaluator.serviceMonitor.enabled=true",
	"--set", "evaluator.fallback=function-runner.porch-system.svc:9445",
}

// evaluatorOnly installs the function evaluator for Porch alone: no service, no database.
var evaluatorOnly = []string{
	"--set", "server.enabled=false",
	"--set", "evaluator.enabled=true",
	"--set", "evaluator.catalogs[0]=oci://registry.example.com/krm/catalogs/platform:v1.4.0",
	"--set", "evaluator.keySecret=catalog-signing-key",
	"--set", "evaluator.fallback=function-runner.porch-system.svc:9445",
}

func TestChart(t *testing.T) {
	t.Parallel()
	helm := helmBinary(t)
	url := []string{"--set", "database.url=postgres://krm@db-a:5432,db-b:5432/krm_catalog?target_session_attrs=read-write"}

	for _, values := range [][]string{url, full, evaluatorOnly} {
		if out, err := runHelm(t, helm, append([]string{"lint", "--strict", chart}, values...)...); err != nil {
			t.Errorf("helm lint: %v\n%s", err, out)
		}
	}
	// with the defaults alone, lint passes with no finding (stdout) and logs only the required value
	// (stderr): no "Fail"
	lint := exec.Command(helm, "lint", "--strict", "--kube-version", kubeVersion, chart)
	var lintOut, lintErr bytes.Buffer
	lint.Stdout, lint.Stderr = &lintOut, &lintErr
	if err := lint.Run(); err != nil || strings.Contains(lintOut.String(), "[") || strings.Contains(lintErr.String(), "Fail") {
		t.Errorf("helm lint with the defaults: %v\n%s%s", err, lintOut.String(), lintErr.String())
	}

	tests := []struct {
		name   string
		values []string
		kinds  []string // rendered, in order
	}{
		{"defaults with a database URL", url, []string{
			"ServiceAccount", "Secret", "Service", "Deployment", "Job", "NetworkPolicy", "PodDisruptionBudget"}},
		{"everything on", full, []string{
			"ServiceAccount", "Service", "Deployment", "Job", "Service", "Deployment", "PodDisruptionBudget",
			"HorizontalPodAutoscaler", "Ingress", "NetworkPolicy", "NetworkPolicy", "PodDisruptionBudget", "ServiceMonitor", "ServiceMonitor"}},
		{"the evaluator alone", evaluatorOnly, []string{
			"ServiceAccount", "Service", "Deployment", "PodDisruptionBudget", "NetworkPolicy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := runHelm(t, helm, append([]string{"template", "rel", chart, "--namespace", "catalog"}, tt.values...)...)
			if err != nil {
				t.Fatal(err)
			}
			objs := decode(t, out)
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.kind())
			}
			if diff := cmp.Diff(sorted(tt.kinds), sorted(kinds)); diff != "" {
				t.Errorf("rendered kinds (-want +got):\n%s", diff)
			}
			for _, o := range objs {
				if o.kind() == "ServiceMonitor" {
					// Prometheus operator's kind: not in Kubernetes' schema
					if o.get("spec", "endpoints") == nil || o.get("spec", "selector", "matchLabels") == nil {
						t.Errorf("ServiceMonitor %s: no endpoints or selector", o.name())
					}
					continue
				}
				problems, err := checkSchema(o.m)
				if err != nil {
					t.Error(err)
				}
				for _, p := range problems {
					t.Errorf("%s %s%s", o.kind(), o.name(), p)
				}
			}
			checkHardening(t, objs)
		})
	}

	// what must fail, fails with a message that says what to set
	for _, tt := range []struct {
		name, want string
		values     []string
	}{
		{"no database", "set database.existingSecret", nil},
		{"an evaluator without catalogs", "evaluator.catalogs", append(slices.Clone(url), "--set", "evaluator.enabled=true")},
		{"nothing at all", "nothing to install", []string{"--set", "server.enabled=false"}},
	} {
		if _, err := runHelm(t, helm, append([]string{"template", "rel", chart}, tt.values...)...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}

// checkHardening holds what the chart promises of every Deployment and the migration Job.
func checkHardening(t *testing.T, objs []object) {
	t.Helper()
	deployments := map[string]object{}
	for _, o := range objs {
		if o.kind() == "Deployment" {
			deployments[o.component()] = o
		}
	}
	var workloads []object
	server, hasServer := deployments["server"]
	if hasServer {
		workloads = append(workloads, server)
	}
	if ev, ok := deployments["evaluator"]; ok {
		workloads = append(workloads, ev)
		checkEvaluator(t, objs, ev)
	}
	if len(workloads) == 0 {
		t.Fatal("no Deployment rendered")
	}
	for _, d := range workloads {
		pod := []any{"spec", "template", "spec"}
		if got := d.get(append(pod, "securityContext", "runAsNonRoot")...); got != true {
			t.Errorf("%s: runAsNonRoot %v", d.name(), got)
		}
		if got := d.get(append(pod, "automountServiceAccountToken")...); got != false {
			t.Errorf("%s: automountServiceAccountToken %v", d.name(), got)
		}
		if got := d.get("spec", "strategy", "rollingUpdate", "maxUnavailable"); got != 0 {
			t.Errorf("%s: a rollout may take a ready pod away first (maxUnavailable %v)", d.name(), got)
		}
		c := append(pod, "containers", 0)
		for _, f := range [][]any{{"livenessProbe"}, {"readinessProbe"}, {"resources", "limits", "cpu"}, {"resources", "limits", "memory"}, {"resources", "requests", "memory"}} {
			if d.get(append(slices.Clone(c), f...)...) == nil {
				t.Errorf("%s: no %v", d.name(), f)
			}
		}
		sc := append(slices.Clone(c), "securityContext")
		if d.get(append(slices.Clone(sc), "readOnlyRootFilesystem")...) != true || d.get(append(slices.Clone(sc), "allowPrivilegeEscalation")...) != false {
			t.Errorf("%s: container securityContext %v", d.name(), d.get(sc...))
		}
		if drop := d.strings(append(slices.Clone(sc), "capabilities", "drop")...); !slices.Contains(drop, "ALL") {
			t.Errorf("%s: capabilities dropped: %v", d.name(), drop)
		}
		// the PDB covers it
		var covered bool
		for _, o := range objs {
			if o.kind() == "PodDisruptionBudget" && cmp.Equal(o.get("spec", "selector", "matchLabels"), d.get("spec", "selector", "matchLabels")) {
				covered = true
			}
		}
		if !covered {
			t.Errorf("%s: no PodDisruptionBudget selects its pods", d.name())
		}
	}
	if !hasServer {
		for _, o := range objs {
			if o.kind() == "Job" || o.kind() == "Secret" || o.kind() == "Ingress" || o.kind() == "HorizontalPodAutoscaler" {
				t.Errorf("the evaluator alone renders a %s %s", o.kind(), o.name())
			}
		}
		return
	}
	for path, want := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if got := server.get("spec", "template", "spec", "containers", 0, path, "httpGet", "path"); got != want {
			t.Errorf("the server's %s asks %v, want %s", path, got, want)
		}
	}
	// the pod drains for --shutdown-delay, then finishes requests within 30 s: the kubelet must not
	// kill it before
	var delay time.Duration
	for _, a := range server.strings("spec", "template", "spec", "containers", 0, "args") {
		if v, ok := strings.CutPrefix(a, "--shutdown-delay="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Errorf("the server's %s: %v", a, err)
			}
			delay = d
		}
	}
	if delay == 0 {
		t.Error("the server drains for no shutdown delay: a Service still sends it requests as its port closes")
	}
	grace, _ := strconv.Atoi(fmt.Sprint(server.get("spec", "template", "spec", "terminationGracePeriodSeconds")))
	if min := delay + 30*time.Second; time.Duration(grace)*time.Second < min {
		t.Errorf("the server's terminationGracePeriodSeconds %v, want at least %s (the shutdown delay and 30 s of in-flight requests)", grace, min)
	}
	var job *object
	for i, o := range objs {
		if o.kind() == "Job" {
			job = &objs[i]
		}
	}
	if job == nil {
		t.Fatal("no migration Job")
	}
	if hook, _ := job.get("metadata", "annotations", "helm.sh/hook").(string); !strings.Contains(hook, "pre-upgrade") {
		t.Errorf("the migration Job's hook: %q, want it to run before an upgrade", hook)
	}
	if diff := cmp.Diff([]string{"migrate", "up"}, job.strings("spec", "template", "spec", "containers", 0, "args")); diff != "" {
		t.Errorf("the migration Job's args (-want +got):\n%s", diff)
	}
	if job.get("spec", "template", "spec", "containers", 0, "securityContext", "readOnlyRootFilesystem") != true {
		t.Error("the migration Job is not hardened like the Deployments")
	}
}

// checkEvaluator holds what the chart promises of the evaluator: fn serve, gRPC health probes, a
// writable TMPDIR on a read-only root, its fallback when set, and a NetworkPolicy that admits
// Porch's namespace to its gRPC port.
func checkEvaluator(t *testing.T, objs []object, ev object) {
	t.Helper()
	c := []any{"spec", "template", "spec", "containers", 0}
	if args := ev.strings(append(slices.Clone(c), "args")...); len(args) < 2 || args[0] != "fn" || args[1] != "serve" {
		t.Errorf("the evaluator runs %v, want fn serve", args)
	} else if !slices.Contains(args, "--fallback=function-runner.porch-system.svc:9445") {
		t.Errorf("the evaluator's args %v lack the fallback set in the values", args)
	}
	for _, p := range []string{"readinessProbe", "livenessProbe", "startupProbe"} {
		if ev.get(append(slices.Clone(c), p, "grpc", "port")...) == nil {
			t.Errorf("the evaluator's %s is not its gRPC health", p)
		}
	}
	checkWritableTmp(t, ev.name(), ev.get("spec", "template", "spec"))
	var admitted bool
	for _, o := range objs {
		if o.kind() != "NetworkPolicy" || o.component() != "evaluator" {
			continue
		}
		if !cmp.Equal(o.get("spec", "podSelector", "matchLabels"), ev.get("spec", "selector", "matchLabels")) {
			t.Errorf("NetworkPolicy %s selects %v, not the evaluator's pods", o.name(), o.get("spec", "podSelector", "matchLabels"))
		}
		admitted = fmt.Sprint(o.get("spec", "ingress", 0, "from", 0, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")) == "porch-system" &&
			fmt.Sprint(o.get("spec", "ingress", 0, "ports", 0, "port")) == "9445"
	}
	if !admitted {
		t.Error("no NetworkPolicy admits Porch's namespace (porch-system) to the evaluator's gRPC port")
	}
}

// checkWritableTmp holds that a pod whose containers have a read-only root gives each a writable
// /tmp (an emptyDir) and TMPDIR pointing at it: functions make their homes there.
func checkWritableTmp(t *testing.T, name string, podSpec any) {
	t.Helper()
	pod := object{m: map[string]any{"spec": podSpec}}
	emptyDirs := map[string]bool{}
	for i := 0; pod.get("spec", "volumes", i) != nil; i++ {
		if pod.get("spec", "volumes", i, "emptyDir") != nil {
			emptyDirs[fmt.Sprint(pod.get("spec", "volumes", i, "name"))] = true
		}
	}
	for i := 0; pod.get("spec", "containers", i) != nil; i++ {
		c := []any{"spec", "containers", i}
		if pod.get(append(slices.Clone(c), "securityContext", "readOnlyRootFilesystem")...) != true {
			continue
		}
		var tmp bool
		for j := 0; pod.get(append(slices.Clone(c), "volumeMounts", j)...) != nil; j++ {
			m := append(slices.Clone(c), "volumeMounts", j)
			if pod.get(append(slices.Clone(m), "mountPath")...) == "/tmp" && emptyDirs[fmt.Sprint(pod.get(append(slices.Clone(m), "name")...))] &&
				pod.get(append(slices.Clone(m), "readOnly")...) != true {
				tmp = true
			}
		}
		var tmpdir bool
		for j := 0; pod.get(append(slices.Clone(c), "env", j)...) != nil; j++ {
			e := append(slices.Clone(c), "env", j)
			tmpdir = tmpdir || pod.get(append(slices.Clone(e), "name")...) == "TMPDIR" && pod.get(append(slices.Clone(e), "value")...) == "/tmp"
		}
		if !tmp || !tmpdir {
			t.Errorf("%s: a read-only root without a writable /tmp emptyDir (%v) and TMPDIR=/tmp (%v)", name, tmp, tmpdir)
		}
	}
}

type object struct{ m map[string]any }

func decode(t *testing.T, out string) []object {
	t.Helper()
	var objs []object
	for _, doc := range strings.Split(out, "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if m != nil {
			objs = append(objs, object{m})
		}
	}
	return objs
}

func (o object) kind() string { s, _ := o.m["kind"].(string); return s }
func (o object) name() string { s, _ := o.get("metadata", "name").(string); return s }
func (o object) component() string {
	s, _ := o.get("metadata", "labels", "app.kubernetes.io/component").(string)
	return s
}

// get follows map keys (strings) and list indexes (ints); nil when a step is missing.
func (o object) get(path ...any) any {
	var v any = o.m
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func (o object) strings(path ...any) []string {
	l, _ := o.get(path...).([]any)
	var out []string
	for _, e := range l {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

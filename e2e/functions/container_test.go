package functions

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

func containerCatalog(t *testing.T, image string, v2 bool) string {
	t.Helper()
	conform := ""
	if v2 {
		conform = "\n      conformWithSpecVersions: [v1, v2]"
	}
	return writeFile(t, t.TempDir(), "catalog.yaml", fmt.Sprintf(`apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: containers
spec:
  krmFunctions:
  - group: fn.example.com
    names:
      kind: SetNamespace
    description: Sets the namespace.
    publisher: example.com
    versions:
    - name: v1
      runtime:
        container:
          image: %s%s
`, image, conform))
}

// leftovers lists the function containers of image (a reference without its digest) that still
// exist. Only the test's own image counts: other tests, and other runs on a shared engine, may have
// containers of their own running at the same moment.
func leftovers(t *testing.T, engine, image string) string {
	t.Helper()
	repo, _, _ := strings.Cut(image, "@")
	out, err := exec.Command(engine, "ps", "-a", "--filter", "name=krm-fn-", "--format", "{{.Names}} {{.Image}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, img, ok := strings.Cut(line, " "); ok && strings.HasPrefix(img, repo) {
			left = append(left, name)
		}
	}
	return strings.Join(left, " ")
}

// A container function from an image pushed to a registry on 127.0.0.1, pinned by digest in the
// catalog and run by Docker: one container per call (v1), and one reused server (v2).
func TestContainerFunction(t *testing.T) {
	engine := fntest.Docker(t)
	host := fntest.Registry(t)
	image := fntest.Image(t, engine, bins.Fn["set-namespace"], host, "functions/set-namespace")
	if !strings.Contains(image, "@sha256:") {
		t.Fatalf("image %s is not pinned", image)
	}
	dir := t.TempDir()
	ns := writeFile(t, dir, "ns.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns\nnamespace: boxed\n")
	ns2 := writeFile(t, dir, "ns2.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns2\nnamespace: boxed-again\n")
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			cat := containerCatalog(t, image, v2)
			out := run{stdin: deployment + "---\n" + service}.krm(t, append([]string{"fn", "run", "-", "--fn-config", ns, "--fn-config", ns2}, flags(t, cat)...)...)
			if out.code != 0 {
				t.Fatal(out)
			}
			if strings.Count(out.stdout, "namespace: boxed-again") != 2 || !strings.Contains(out.stdout, "# the public face") {
				t.Errorf("output:\n%s", out.stdout)
			}
			servers := strings.Count(out.stderr, "serving KRM function (spec v2)")
			if v2 && servers != 1 {
				t.Errorf("%d servers for two steps of one v2 function, want 1:\n%s", servers, out.stderr)
			}
			if !v2 && servers != 0 {
				t.Errorf("a v1 function was started as a server:\n%s", out.stderr)
			}
			if left := leftovers(t, engine, image); left != "" {
				t.Errorf("containers left behind: %s", left)
			}
		})
	}

	// the image must be pinned: the same image by tag is refused
	tagged := containerCatalog(t, strings.Split(image, "@")[0]+":test", false)
	out := run{stdin: service}.krm(t, append([]string{"fn", "run", "-", "--fn-config", ns}, flags(t, tagged)...)...)
	if out.code != 2 || !strings.Contains(out.stderr, "by digest") {
		t.Errorf("an unpinned catalog image must be refused:\n%s", out)
	}
}

// The container really is locked down: a probe function reports, from inside, its user, the
// no_new_privs flag, its capabilities and its network interfaces. One container per call has only
// the loopback interface; a server sits on an internal network (no route out) and is reached there.
func TestContainerIsLockedDown(t *testing.T) {
	engine := fntest.Docker(t)
	host := fntest.Registry(t)
	probe := fntest.GoBuild(t, bins.Root, "./e2e/functions/testdata/probe")
	image := fntest.Image(t, engine, probe, host, "functions/probe")
	cfg := writeFile(t, t.TempDir(), "probe.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nnamespace: x\n")
	for _, tc := range []struct {
		v2         bool
		interfaces string
	}{{false, "interfaces=lo"}, {true, "interfaces=lo,eth0"}} {
		// two steps: a v2 function that runs more than once is run as a server
		out := run{stdin: service}.krm(t, append([]string{"fn", "run", "-", "--fn-config", cfg, "--fn-config", cfg}, flags(t, containerCatalog(t, image, tc.v2))...)...)
		if out.code != 0 {
			t.Fatal(out)
		}
		for _, want := range []string{
			"probe: uid=65534 nonewprivs=1 capeff=0000000000000000 " + tc.interfaces + "\n",
			// read-only root, a tmpfs /tmp, and the default limits: 2GiB, 256 processes
			"probe: root=read-only tmp=writable memory=2147483648 pids=256\n",
		} {
			if !strings.Contains(out.stderr, want) {
				t.Errorf("v2=%v: the probe reported something else than %q:\n%s", tc.v2, want, out.stderr)
			}
		}
	}
	internal, err := exec.Command(engine, "network", "inspect", "--format", "{{.Internal}}", "krm-catalog-fn-internal").Output()
	if err != nil {
		t.Fatalf("the network of function servers is missing: %v", err)
	}
	if strings.TrimSpace(string(internal)) != "true" {
		t.Errorf("the network of function servers is not internal: %s", internal)
	}
}

// The container's memory and process limits follow the flags, and the memory limit holds: a
// function that allocates past it is killed, one that stays under it runs.
func TestContainerLimits(t *testing.T) {
	engine := fntest.Docker(t)
	host := fntest.Registry(t)
	probe := fntest.GoBuild(t, bins.Root, "./e2e/functions/testdata/probe")
	image := fntest.Image(t, engine, probe, host, "functions/probe")
	cat := containerCatalog(t, image, false)
	limits := []string{"--container-memory", "64MiB", "--container-pids-limit", "32"}
	for _, tc := range []struct {
		name, allocate string
		wantCode       int
		want           string
	}{
		{"under the limit", "16", 0, "probe: allocated 16 MiB"},
		{"over the limit", "256", 1, "exit status 137"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeFile(t, t.TempDir(), "probe.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nnamespace: x\nallocateMiB: '"+tc.allocate+"'\n")
			out := run{stdin: service}.krm(t, append(append([]string{"fn", "run", "-", "--fn-config", cfg}, limits...), flags(t, cat)...)...)
			if out.code != tc.wantCode || !strings.Contains(out.stderr, tc.want) {
				t.Fatalf("want exit %d and %q:\n%s", tc.wantCode, tc.want, out)
			}
			if tc.wantCode == 0 && !strings.Contains(out.stderr, "probe: root=read-only tmp=writable memory=67108864 pids=32\n") {
				t.Errorf("the limits the probe reports are not the flags':\n%s", out.stderr)
			}
			if left := leftovers(t, engine, image); left != "" {
				t.Errorf("containers left behind: %s", left)
			}
		})
	}
}

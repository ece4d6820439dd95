// Command probe is a KRM function that reports, as an info result, what the sandbox it runs in
// allows: its user id, the no_new_privs flag, its effective capabilities and its network
// interfaces, then whether it can write to / and /tmp and the memory and process limits of its
// cgroup. The container tests run it to check what Docker was told. With allocateMiB in its config it
// first allocates and touches that much memory, to show the limit holds.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/krm-catalog/krm-catalog/pkg/krmfn"
)

func main() { os.Exit(krmfn.Main(probe)) }

func probe(rl *krmfn.ResourceList) error {
	if rl.FunctionConfig != nil {
		if v, err := rl.FunctionConfig.GetString("allocateMiB"); err == nil && v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return err
			}
			mem := make([]byte, n<<20)
			for i := 0; i < len(mem); i += 4096 {
				mem[i] = 1
			}
			rl.Results = append(rl.Results, krmfn.Result{Severity: krmfn.SeverityInfo, Message: fmt.Sprintf("probe: allocated %d MiB", len(mem)>>20)})
		}
	}
	status := map[string]string{}
	if f, err := os.Open("/proc/self/status"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok {
				status[k] = strings.TrimSpace(v)
			}
		}
		f.Close()
	}
	var names []string
	ifaces, _ := net.Interfaces()
	for _, i := range ifaces {
		names = append(names, i.Name)
	}
	rl.Results = append(rl.Results, krmfn.Result{Severity: krmfn.SeverityInfo, Message: fmt.Sprintf("probe: uid=%d nonewprivs=%s capeff=%s interfaces=%s",
		os.Getuid(), status["NoNewPrivs"], status["CapEff"], strings.Join(names, ","))})
	rl.Results = append(rl.Results, krmfn.Result{Severity: krmfn.SeverityInfo, Message: fmt.Sprintf("probe: root=%s tmp=%s memory=%s pids=%s",
		writable("/"), writable("/tmp"),
		first("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"),
		first("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"))})
	return nil
}

// writable says whether a file can be created in dir.
func writable(dir string) string {
	f, err := os.CreateTemp(dir, "probe-")
	if err != nil {
		return "read-only"
	}
	f.Close()
	os.Remove(f.Name())
	return "writable"
}

// first returns the content of the first of the files that exists (cgroup v2, then v1).
func first(paths ...string) string {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return "unknown"
}

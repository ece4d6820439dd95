// Command probe is a KRM function that reports, as an info result, what the sandbox it runs in
// allows: its user id, the no_new_privs flag, its effective capabilities and its network
// interfaces. The container tests run it to check what Docker was told.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/krm-catalog/krm-catalog/pkg/krmfn"
)

func main() { os.Exit(krmfn.Main(probe)) }

func probe(rl *krmfn.ResourceList) error {
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
	return nil
}

// Command yaml-only is a KRM function on kyaml's fn/framework that, like the catalog's gatekeeper,
// reads its input only as YAML text: given JSON it fails. Otherwise it annotates every resource
// that is not local config with checked: "true".
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		os.Exit(1)
	}
	if t := bytes.TrimSpace(in); len(t) > 0 && t[0] == '{' {
		fmt.Fprintln(os.Stderr, "tried to parse JSON as YAML. Use --json flag.")
		os.Exit(1)
	}
	p := framework.ResourceListProcessorFunc(func(rl *framework.ResourceList) error {
		for _, it := range rl.Items {
			if it.GetAnnotations()["config.kubernetes.io/local-config"] == "true" {
				continue
			}
			if err := it.PipeE(yaml.SetAnnotation("checked", "true")); err != nil {
				return err
			}
		}
		return nil
	})
	rw := &kio.ByteReadWriter{Reader: bytes.NewReader(in), Writer: os.Stdout, KeepReaderAnnotations: true}
	if err := framework.Execute(p, rw); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

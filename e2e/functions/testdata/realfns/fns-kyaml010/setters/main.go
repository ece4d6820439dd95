// Command setters is a KRM function on kyaml v0.10's fn/framework, as the catalog's apply-setters
// is: every scalar with a line comment "# kpt-set: ${NAME}" gets the value of NAME from the
// functionConfig's data. Its results are in the shape that framework writes (results: {name,
// items}).
package main

import (
	"fmt"
	"os"
	"regexp"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

var setter = regexp.MustCompile(`^# kpt-set: \$\{([A-Za-z0-9_-]+)\}$`)

func main() {
	p := framework.ResourceListProcessorFunc(func(rl *framework.ResourceList) error {
		values := map[string]string{}
		if rl.FunctionConfig != nil {
			if d := rl.FunctionConfig.Field("data"); d != nil {
				_ = d.Value.VisitFields(func(n *yaml.MapNode) error {
					values[n.Key.YNode().Value] = n.Value.YNode().Value
					return nil
				})
			}
		}
		rl.Result = &framework.Result{Name: "setters"}
		for _, it := range rl.Items {
			walk(it.YNode(), func(n *yaml.Node) {
				m := setter.FindStringSubmatch(n.LineComment)
				if m == nil {
					return
				}
				if v, ok := values[m[1]]; ok && n.Value != v {
					n.Value = v
					rl.Result.Items = append(rl.Result.Items, framework.ResultItem{
						Message: fmt.Sprintf("set field value to %q", v), Severity: framework.Info,
						ResourceRef: yaml.ResourceIdentifier{TypeMeta: yaml.TypeMeta{APIVersion: it.GetApiVersion(), Kind: it.GetKind()}, NameMeta: yaml.NameMeta{Name: it.GetName()}},
					})
				}
			})
		}
		return nil
	})
	if err := framework.Execute(p, &kio.ByteReadWriter{Reader: os.Stdin, Writer: os.Stdout}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func walk(n *yaml.Node, f func(*yaml.Node)) {
	if n.Kind == yaml.ScalarNode {
		f(n)
	}
	for _, c := range n.Content {
		walk(c, f)
	}
}

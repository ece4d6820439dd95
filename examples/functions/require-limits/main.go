// Command require-limits is an example validating KRM function: every container and init container
// of a workload must declare resource limits (by default cpu and memory). Each one missing is an
// error result naming the resource, the field and the file; the items pass through unchanged.
//
// functionConfig: {apiVersion: fn.example.com/v1, kind: RequireResourceLimits, require: [cpu, memory]}
// (require is optional).
package main

import (
	"fmt"
	"os"
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/pkg/krmfn"
)

func main() { os.Exit(krmfn.Main(requireLimits)) }

// podSpecPath is where a workload kind keeps its pod spec; ok is false for other kinds.
func podSpecPath(kind string) (path []string, ok bool) {
	switch kind {
	case "Pod":
		return []string{"spec"}, true
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job":
		return []string{"spec", "template", "spec"}, true
	case "CronJob":
		return []string{"spec", "jobTemplate", "spec", "template", "spec"}, true
	}
	return nil, false
}

func requireLimits(rl *krmfn.ResourceList) error {
	required, ok := krmfn.ConfigStrings(rl.FunctionConfig, "require")
	if !ok {
		required = []string{"cpu", "memory"}
	}
	for _, it := range rl.Items {
		path, ok := podSpecPath(it.GetKind())
		if !ok {
			continue
		}
		spec, err := it.Pipe(yaml.Lookup(path...))
		if err != nil || spec == nil {
			continue
		}
		for _, list := range []string{"initContainers", "containers"} {
			cs, err := spec.Pipe(yaml.Lookup(list))
			if err != nil || cs == nil {
				continue
			}
			for i, c := range cs.YNode().Content {
				container := yaml.NewRNode(c)
				for _, res := range required {
					v, _ := container.Pipe(yaml.Lookup("resources", "limits", res))
					if v != nil && v.YNode().Value != "" {
						continue
					}
					rl.Results = append(rl.Results, missing(it, container, list, i, res, path))
				}
			}
		}
	}
	return nil
}

func missing(it, container *yaml.RNode, list string, i int, res string, path []string) krmfn.Result {
	field := ""
	for _, p := range path {
		field += p + "."
	}
	field += fmt.Sprintf("%s[%d].resources.limits.%s", list, i, res)
	name, _ := container.GetString("name")
	r := krmfn.Result{
		Message:  fmt.Sprintf("container %q has no %s limit", name, res),
		Severity: krmfn.SeverityError,
		ResourceRef: &krmfn.ResourceRef{
			APIVersion: it.GetApiVersion(), Kind: it.GetKind(), Name: it.GetName(), Namespace: it.GetNamespace(),
		},
		Field: &krmfn.Field{Path: field},
	}
	anns := it.GetAnnotations()
	if p := anns[kioutil.PathAnnotation]; p != "" {
		idx, _ := strconv.Atoi(anns[kioutil.IndexAnnotation])
		r.File = &krmfn.File{Path: p, Index: idx}
	}
	return r
}

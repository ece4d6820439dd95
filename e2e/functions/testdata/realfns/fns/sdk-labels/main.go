// Command sdk-labels is a KRM function on kptdev/krm-functions-sdk, written as the catalog's
// set-labels is: it labels every resource that is not local config with the functionConfig's data,
// plus pkg=<the Kptfile's name> and the data of a local-config ConfigMap named package-context
// (kpt's package-context pattern), reports what it did in results without a severity, and, when
// the config says generate: NAME, creates a ConfigMap NAME in namespace generate-namespace.
package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/kptdev/krm-functions-sdk/go/fn"
)

func process(rl *fn.ResourceList) (bool, error) {
	labels := map[string]string{}
	cfg, _, err := rl.FunctionConfig.NestedStringMap("data")
	if err != nil {
		return false, err
	}
	for _, o := range rl.Items {
		switch {
		case o.GetKind() == "Kptfile":
			labels["pkg"] = o.GetName()
		case o.IsLocalConfig() && o.GetKind() == "ConfigMap" && o.GetName() == "package-context":
			data, _, err := o.NestedStringMap("data")
			if err != nil {
				return false, err
			}
			for k, v := range data {
				labels[k] = v
			}
		}
	}
	generate, genNS := "", ""
	for k, v := range cfg {
		switch k {
		case "generate":
			generate = v
		case "generate-namespace":
			genNS = v
		default:
			labels[k] = v
		}
	}
	if generate != "" {
		o := fn.NewEmptyKubeObject()
		if err := o.SetAPIVersion("v1"); err != nil {
			return false, err
		}
		if err := o.SetKind("ConfigMap"); err != nil {
			return false, err
		}
		if err := o.SetName(generate); err != nil {
			return false, err
		}
		if genNS != "" {
			if err := o.SetNamespace(genNS); err != nil {
				return false, err
			}
		}
		if err := rl.UpsertObjectToItems(o, nil, false); err != nil {
			return false, err
		}
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := 0
	for _, o := range rl.Items {
		if o.IsLocalConfig() || o.GetKind() == "Kptfile" {
			continue
		}
		for _, k := range keys {
			if err := o.SetLabel(k, labels[k]); err != nil {
				return false, err
			}
			n++
		}
	}
	// no severity, as set-annotations reports its own
	rl.Results = append(rl.Results, &fn.Result{Message: fmt.Sprintf("set %d labels", n)})
	return true, nil
}

func main() {
	if err := fn.AsMain(fn.ResourceListProcessorFunc(process)); err != nil {
		os.Exit(1)
	}
}

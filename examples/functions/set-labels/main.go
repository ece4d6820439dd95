// Command set-labels is an example KRM function: it adds labels to every resource that is not
// local config.
//
// functionConfig: {apiVersion: fn.example.com/v1, kind: SetLabels, labels: {KEY: VALUE}}, or a
// ConfigMap whose data are the labels.
package main

import (
	"errors"
	"os"
	"sort"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/pkg/krmfn"
)

func main() { os.Exit(krmfn.Main(setLabels)) }

func setLabels(rl *krmfn.ResourceList) error {
	labels := krmfn.ConfigMap(rl.FunctionConfig, "labels")
	if len(labels) == 0 {
		return errors.New("functionConfig must set labels")
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys) // new labels in a stable order
	for _, it := range rl.Items {
		if krmfn.IsLocalConfig(it) {
			continue // a function's input (the Kptfile, configs), left alone as kpt's catalog functions leave it
		}
		for _, k := range keys {
			if err := it.PipeE(yaml.SetLabel(k, labels[k])); err != nil {
				return err
			}
		}
	}
	return nil
}

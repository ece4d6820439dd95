// Command set-namespace is an example KRM function: it sets metadata.namespace on every namespaced
// resource that is not local config, and the namespace of ServiceAccount subjects in RoleBindings
// and ClusterRoleBindings.
//
// functionConfig: {apiVersion: fn.example.com/v1, kind: SetNamespace, namespace: NAME}, or a
// ConfigMap with data.namespace.
package main

import (
	"errors"
	"os"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/pkg/krmfn"
)

func main() { os.Exit(krmfn.Main(setNamespace)) }

// clusterScoped reports the built-in kinds that have no namespace.
func clusterScoped(kind string) bool {
	switch kind {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PersistentVolume",
		"StorageClass", "Node", "APIService", "PriorityClass", "MutatingWebhookConfiguration",
		"ValidatingWebhookConfiguration", "IngressClass", "RuntimeClass", "CSIDriver", "VolumeAttachment",
		"ValidatingAdmissionPolicy":
		return true
	}
	return false
}

func setNamespace(rl *krmfn.ResourceList) error {
	ns, ok := krmfn.ConfigString(rl.FunctionConfig, "namespace")
	if !ok || ns == "" {
		return errors.New("functionConfig must set namespace")
	}
	for _, it := range rl.Items {
		if krmfn.IsLocalConfig(it) {
			continue // a function's input (the Kptfile, configs), left alone as kpt's catalog functions leave it
		}
		kind := it.GetKind()
		if !clusterScoped(kind) {
			if err := it.PipeE(yaml.LookupCreate(yaml.MappingNode, "metadata"), yaml.SetField("namespace", yaml.NewStringRNode(ns))); err != nil {
				return err
			}
		}
		if kind == "RoleBinding" || kind == "ClusterRoleBinding" {
			subjects, err := it.Pipe(yaml.Lookup("subjects"))
			if err != nil || subjects == nil {
				continue
			}
			for _, s := range subjects.YNode().Content {
				sub := yaml.NewRNode(s)
				if sub.Field("kind") != nil && sub.Field("kind").Value.YNode().Value == "ServiceAccount" {
					if err := sub.PipeE(yaml.SetField("namespace", yaml.NewStringRNode(ns))); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

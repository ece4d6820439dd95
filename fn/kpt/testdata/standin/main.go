// Command standin stands in for the kpt catalog functions that kpt's fn-render end-to-end cases run
// (set-namespace, set-labels, set-annotations, ...), so that the conformance test needs no image
// from a registry. The function is named by the first argument (the test images' entrypoints name
// it). Each does what the cases need of the real one, writing fields where the real one writes them.
//
// Installed under the name docker, it is a container engine that runs no container: `docker run
// ... IMAGE` runs the stand-in named by the image's last path element in this process. The
// conformance test uses it so that the cases do not pay for a container each step.
package main

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
)

func main() {
	if filepath.Base(os.Args[0]) == "docker" {
		engine(os.Args[1:])
		return
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: standin FUNCTION [TAG]")
		os.Exit(2)
	}
	tag := ""
	if len(os.Args) > 2 {
		tag = os.Args[2]
	}
	run(os.Args[1], tag)
}

// engine is the docker shim: run's last argument is the image; anything else succeeds doing nothing.
func engine(args []string) {
	if len(args) < 2 || args[0] != "run" {
		return
	}
	repo, tag := args[len(args)-1], ""
	if i := strings.LastIndex(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo, tag = repo[:i], repo[i+1:]
	}
	run(path.Base(repo), tag)
}

// run runs the stand-in for a function; tag is the image's tag, for the functions whose cases
// need a version's behaviour.
func run(name, tag string) {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	rl, format, err := fn.DecodeResourceList(data)
	if err != nil {
		fail(err)
	}
	f, ok := functions[name]
	if name == "set-namespace" && tag == "latest" {
		// the catalog's newest set-namespace leaves the Kptfile alone (format-on-success)
		f = setNamespace(false)
	}
	if !ok {
		fail(fmt.Errorf("no stand-in named %q", name))
	}
	if err := f(rl); err != nil {
		if err != errFunctionFailure {
			fail(err)
		}
		// results are output: write them, then fail
		out, encErr := rl.Encode(format)
		if encErr != nil {
			fail(encErr)
		}
		os.Stdout.Write(out)
		fail(err)
	}
	out, err := rl.Encode(format)
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(out)
}

// errFunctionFailure is what a function that reports error results returns (it exits 1 with them).
var errFunctionFailure = fmt.Errorf("function failure")

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

var functions = map[string]func(*fn.ResourceList) error{
	"set-namespace":   setNamespace(true),
	"set-labels":      setLabels,
	"set-annotations": setAnnotations,
	"no-op":           func(*fn.ResourceList) error { return nil },
	"kubeconform":     kubeconform,
	"search-replace":  searchReplace,
}

// clusterScoped are the kinds set-namespace leaves without a namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"PersistentVolume": true, "StorageClass": true, "PriorityClass": true, "Node": true,
}

func configData(rl *fn.ResourceList) map[string]string {
	if rl.FunctionConfig == nil {
		return nil
	}
	return rl.FunctionConfig.GetDataMap()
}

// setNamespace sets data.namespace on every namespaced resource, the Kptfile too when kptfile is
// set (as versions up to v0.2 do).
func setNamespace(kptfile bool) func(*fn.ResourceList) error {
	return func(rl *fn.ResourceList) error { return setNamespaceOn(rl, kptfile) }
}

func setNamespaceOn(rl *fn.ResourceList, kptfile bool) error {
	ns := configData(rl)["namespace"]
	if ns == "" {
		return fmt.Errorf("functionConfig: data.namespace is required")
	}
	for _, it := range rl.Items {
		if clusterScoped[it.GetKind()] || !kptfile && it.GetKind() == "Kptfile" {
			continue
		}
		if err := it.PipeE(yaml.SetK8sNamespace(ns)); err != nil {
			return err
		}
	}
	return nil
}

// workloads have their labels copied into the selector and the pod template, as kustomize's
// commonLabels field specs do.
var workloads = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true}

func setLabels(rl *fn.ResourceList) error {
	labels := configData(rl)
	keys := sortedKeys(labels)
	for _, it := range rl.Items {
		paths := [][]string{{"metadata", "labels"}}
		if workloads[it.GetKind()] {
			paths = append(paths, []string{"spec", "selector", "matchLabels"}, []string{"spec", "template", "metadata", "labels"})
		}
		for _, p := range paths {
			m, err := it.Pipe(yaml.LookupCreate(yaml.MappingNode, p...))
			if err != nil {
				return err
			}
			for _, k := range keys {
				if err := m.PipeE(yaml.SetField(k, yaml.NewStringRNode(labels[k]))); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func setAnnotations(rl *fn.ResourceList) error {
	anns := configData(rl)
	keys := sortedKeys(anns)
	for _, it := range rl.Items {
		for _, k := range keys {
			if err := it.PipeE(yaml.SetAnnotation(k, anns[k])); err != nil {
				return err
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// kubeconform checks Deployments against the little of their schema the cases need (selector and
// template required, replicas an integer), reporting what kubeconform reports; kinds it has no
// schema for are skipped, as the function's cases show.
func kubeconform(rl *fn.ResourceList) error {
	for _, it := range rl.Items {
		if it.GetApiVersion() != "apps/v1" || it.GetKind() != "Deployment" {
			continue
		}
		ref := &fn.ResourceRef{APIVersion: it.GetApiVersion(), Kind: it.GetKind(), Name: it.GetName(), Namespace: it.GetNamespace()}
		file := &fn.File{Path: it.GetAnnotations()[kioutil.PathAnnotation]}
		report := func(msg, field string) {
			rl.Results = append(rl.Results, fn.Result{Message: msg, Severity: fn.SeverityError, ResourceRef: ref, Field: &fn.Field{Path: field}, File: file})
		}
		var missing []string
		for _, f := range []string{"selector", "template"} {
			if it.Field("spec") == nil || it.Field("spec").Value.Field(f) == nil {
				missing = append(missing, "'"+f+"'")
			}
		}
		if len(missing) > 0 {
			report("missing properties "+strings.Join(missing, ", "), "spec")
		}
		if r, err := it.Pipe(yaml.Lookup("spec", "replicas")); err == nil && r != nil {
			if _, err := strconv.Atoi(r.YNode().Value); err != nil || r.YNode().Tag == yaml.NodeTagString {
				report("got string, want null or integer", "spec.replicas")
			}
		}
	}
	if fn.HasErrors(rl.Results) {
		return errFunctionFailure
	}
	return nil
}

// searchReplace puts put-value in the field at by-path (a dotted path) where it holds by-value,
// reporting each change as search-replace does.
func searchReplace(rl *fn.ResourceList) error {
	cfg := configData(rl)
	path, from, to := cfg["by-path"], cfg["by-value"], cfg["put-value"]
	if path == "" || to == "" {
		return fmt.Errorf("functionConfig: data.by-path and data.put-value are required")
	}
	for _, it := range rl.Items {
		f, err := it.Pipe(yaml.Lookup(strings.Split(path, ".")...))
		if err != nil {
			return err
		}
		if f == nil || from != "" && f.YNode().Value != from {
			continue
		}
		f.YNode().Value = to
		rl.Results = append(rl.Results, fn.Result{
			Message: fmt.Sprintf("Mutated field value to %q", to), Severity: fn.SeverityInfo,
			Field: &fn.Field{Path: path}, File: &fn.File{Path: it.GetAnnotations()[kioutil.PathAnnotation]},
		})
	}
	return nil
}

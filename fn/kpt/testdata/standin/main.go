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
	"encoding/json"
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
	repo := args[len(args)-1]
	if i := strings.LastIndex(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	tag := ""
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo, tag = repo[:i], repo[i+1:]
	}
	run(path.Base(repo), tag)
}

// run runs the stand-in for a function; tag is the image's tag, for the functions whose behaviour
// changed between the versions the cases name.
func run(name, tag string) {
	// every case at kpt's main names the catalog's current functions: latest, or a recent version
	// a tag constraint chose, which behave alike
	tag = latest
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	rl, format, err := fn.DecodeResourceList(data)
	if err != nil {
		fail(err)
	}
	f, ok := functions[name]
	if !ok {
		// as docker fails to run an image it cannot pull
		fmt.Fprintf(os.Stderr, "docker: Error response from daemon: pull access denied for %s\n\nRun 'docker run --help' for more information", name)
		os.Exit(125)
	}
	if err := f(rl, tag); err != nil {
		fail(err)
	}
	out, err := rl.Encode(format)
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(out)
	// a function that reports an error result fails, as the catalog's validators do
	for _, r := range rl.Results {
		if r.IsError() {
			// the catalog's SDK says this on stderr when a function fails
			fmt.Fprint(os.Stderr, "failed to evaluate function: error: function failure")
			os.Exit(1)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

var functions = map[string]func(rl *fn.ResourceList, tag string) error{
	"set-namespace":      setNamespace,
	"set-labels":         setLabels,
	"set-annotations":    setAnnotations,
	"no-op":              func(*fn.ResourceList, string) error { return nil },
	"drop-comments":      dropComments,
	"gatekeeper":         gatekeeper,
	"kubeconform":        kubeconform,
	"search-replace":     searchReplace,
	"apply-replacements": applyReplacements,
}

// latest is the tag of the catalog's current functions, which the newest cases name: set-namespace
// leaves the Kptfile alone, set-labels creates only the selector of a workload (and sets the
// template's and a Service's selector where they exist). The pinned versions the older cases name
// write the Kptfile and create the pod template's labels.
const latest = "latest"

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

func setNamespace(rl *fn.ResourceList, tag string) error {
	ns := configData(rl)["namespace"]
	// the package context (kpt's kptfile.kpt.dev ConfigMap) names the namespace by the package
	if cfg := rl.FunctionConfig; cfg != nil && cfg.GetKind() == "ConfigMap" && cfg.GetName() == "kptfile.kpt.dev" {
		ns = configData(rl)["name"]
	}
	if ns == "" {
		return fmt.Errorf("functionConfig: data.namespace is required")
	}
	count := 0
	old := map[string]string{}
	for _, it := range rl.Items {
		// a Namespace is renamed
		if tag == latest && it.GetKind() == "Namespace" && !localConfig(it) && it.GetName() != ns {
			old[it.GetName()] = it.GetName()
			count++
			if err := it.SetName(ns); err != nil {
				return err
			}
			continue
		}
		// the catalog's function leaves local-config resources alone (what kpt live apply skips)
		if clusterScoped[it.GetKind()] || tag == latest && (it.GetKind() == "Kptfile" || localConfig(it)) {
			continue
		}
		cur := it.GetNamespace()
		// the catalog's function leaves a kind it does not know alone unless it has a namespace
		if tag == latest && cur == "" && !namespaced[it.GetKind()] {
			continue
		}
		if cur == "" {
			cur = "default"
		}
		if cur == ns {
			continue
		}
		old[cur] = cur
		count++
		if err := it.PipeE(yaml.SetK8sNamespace(ns)); err != nil {
			return err
		}
	}
	if tag != latest {
		return nil
	}
	// the results the catalog's function reports
	msg := fmt.Sprintf("all matching namespaces are already %q. no value changed", ns)
	if count > 0 {
		msg = fmt.Sprintf("namespace %v updated to %q, %d value(s) changed", sortedKeys(old), ns, count)
	}
	rl.Results = append(rl.Results,
		fn.Result{Message: msg, Severity: fn.SeverityInfo},
		fn.Result{Message: "all `depends-on` annotations are up-to-date. no `namespace` changed", Severity: fn.SeverityInfo})
	return nil
}

// localConfig reports a resource marked config.kubernetes.io/local-config: "true".
func localConfig(it *yaml.RNode) bool {
	return it.GetAnnotations()["config.kubernetes.io/local-config"] == "true"
}

// namespaced are the namespaced kinds the catalog's set-namespace knows.
var namespaced = map[string]bool{
	"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true, "Pod": true, "Job": true,
	"CronJob": true, "Service": true, "ConfigMap": true, "Secret": true, "ServiceAccount": true, "Role": true,
	"RoleBinding": true, "Ingress": true, "PersistentVolumeClaim": true, "NetworkPolicy": true,
	"HorizontalPodAutoscaler": true, "PodDisruptionBudget": true, "Endpoints": true, "LimitRange": true,
	"ResourceQuota": true, "ReplicationController": true,
}

// workloads have their labels copied into the selector and the pod template, as kustomize's
// commonLabels field specs do.
var workloads = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true}

func setLabels(rl *fn.ResourceList, tag string) error {
	labels, err := labelsConfig(rl)
	if err != nil {
		return err
	}
	keys := sortedKeys(labels)
	count := 0
	for _, it := range rl.Items {
		if tag == latest && localConfig(it) {
			continue // as the catalog's function: local-config resources are left alone
		}
		paths := [][]string{{"metadata", "labels"}}
		switch {
		case workloads[it.GetKind()] && tag != latest:
			paths = append(paths, []string{"spec", "selector", "matchLabels"}, []string{"spec", "template", "metadata", "labels"})
		case workloads[it.GetKind()]:
			paths = append(paths, []string{"spec", "selector", "matchLabels"})
			if it.Field("spec") != nil && it.Field("spec").Value.Field("template") != nil {
				paths = append(paths, []string{"spec", "template", "metadata", "labels"})
			}
		case it.GetKind() == "Service" && tag == latest:
			paths = append(paths, []string{"spec", "selector"})
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
				count++
			}
		}
	}
	if tag == latest {
		rl.Results = append(rl.Results, fn.Result{Message: fmt.Sprintf("set %d labels in total", count), Severity: fn.SeverityInfo})
	}
	return nil
}

// labelsConfig reads set-labels' config: a ConfigMap's data or a SetLabels' labels; anything else,
// or none, is an error, as it is for the real function.
func labelsConfig(rl *fn.ResourceList) (map[string]string, error) {
	cfg := rl.FunctionConfig
	switch {
	case cfg == nil || cfg.IsNilOrEmpty():
		// the catalog's function reports this, and fails
		rl.Results = append(rl.Results, fn.Result{Message: "`FunctionConfig` is not given", Severity: fn.SeverityInfo})
		out, err := rl.Encode(fn.YAML)
		if err != nil {
			return nil, err
		}
		os.Stdout.Write(out)
		fmt.Fprint(os.Stderr, "failed to evaluate function: error: function failure")
		os.Exit(1)
	case cfg.GetKind() == "ConfigMap":
		return cfg.GetDataMap(), nil
	case cfg.GetKind() == "SetLabels":
		return stringMap(cfg, "labels")
	}
	return nil, fmt.Errorf("failed to configure function: `functionConfig` must be either a `ConfigMap` or `SetLabels`")
}

// stringMap reads a mapping field of strings.
func stringMap(n *yaml.RNode, field string) (map[string]string, error) {
	out := map[string]string{}
	f := n.Field(field)
	if f == nil {
		return out, nil
	}
	err := f.Value.VisitFields(func(m *yaml.MapNode) error {
		out[m.Key.YNode().Value] = m.Value.YNode().Value
		return nil
	})
	return out, err
}

// setAnnotations adds the config's annotations to every resource and to the pod templates of
// workloads. Like the real function (which rebuilds the annotations through kustomize), it leaves
// the values of the annotations a resource already had unquoted where they stay strings.
func setAnnotations(rl *fn.ResourceList, _ string) error {
	anns := configData(rl)
	keys := sortedKeys(anns)
	annsJSON, err := json.Marshal(anns)
	if err != nil {
		return err
	}
	for _, it := range rl.Items {
		if existing := it.Field("metadata").Value.Field("annotations"); existing != nil {
			unquote(existing.Value)
		}
		paths := [][]string{{"metadata", "annotations"}}
		if workloads[it.GetKind()] {
			paths = append(paths, []string{"spec", "template", "metadata", "annotations"})
		}
		for _, p := range paths {
			// the catalog's function reports each field it set, by file, index and path
			index, _ := strconv.Atoi(it.GetAnnotations()[kioutil.IndexAnnotation])
			rl.Results = append(rl.Results, fn.Result{
				Message: "set annotations: " + string(annsJSON),
				Field:   &fn.Field{Path: strings.Join(p, ".")},
				// the catalog's function names the file by its base name (kustomize's resource key)
				File: &fn.File{Path: path.Base(it.GetAnnotations()[kioutil.PathAnnotation]), Index: index},
			})
			m, err := it.Pipe(yaml.LookupCreate(yaml.MappingNode, p...))
			if err != nil {
				return err
			}
			for _, k := range keys {
				if err := m.PipeE(yaml.SetField(k, yaml.NewStringRNode(anns[k]))); err != nil {
					return err
				}
			}
		}
	}
	// one result per file, index and field, as the catalog's function keys them
	seen := map[string]bool{}
	results := rl.Results[:0]
	for _, r := range rl.Results {
		k := fmt.Sprintf("%s#%d#%s", r.File.Path, r.File.Index, r.Field.Path)
		if !seen[k] {
			seen[k] = true
			results = append(results, r)
		}
	}
	rl.Results = results
	sort.SliceStable(rl.Results, func(i, j int) bool {
		a, b := rl.Results[i], rl.Results[j]
		if a.File.Path != b.File.Path {
			return a.File.Path < b.File.Path
		}
		if a.File.Index != b.File.Index {
			return a.File.Index < b.File.Index
		}
		return a.Field.Path < b.Field.Path
	})
	return nil
}

// unquote drops the quotes of a mapping's string values that read as strings without them.
func unquote(m *yaml.RNode) {
	c := m.YNode().Content
	for i := 1; i < len(c); i += 2 {
		v := c[i]
		if v.Kind != yaml.ScalarNode || v.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) == 0 {
			continue
		}
		plain := &yaml.Node{Kind: yaml.ScalarNode, Value: v.Value}
		if plain.ShortTag() == yaml.NodeTagString && !strings.ContainsAny(v.Value, ":#\n") {
			v.Style = 0
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// dropComments removes every comment from the resources, as the catalog's drop-comments does.
func dropComments(rl *fn.ResourceList, _ string) error {
	for _, it := range rl.Items {
		clearComments(it.YNode())
	}
	return nil
}

func clearComments(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		clearComments(c)
	}
}

// gatekeeper stands in for the catalog's gatekeeper validator for the one kind of constraint the
// cases use, K8sConfigMapKeysRulesV1 (keys a ConfigMap must not have), evaluated directly rather
// than through its rego: one result per constraint a ConfigMap violates, its severity from the
// constraint's enforcementAction (warn, dryrun, or an error).
func gatekeeper(rl *fn.ResourceList, _ string) error {
	for _, c := range rl.Items {
		if c.GetKind() != "K8sConfigMapKeysRulesV1" {
			continue
		}
		banned, err := c.Pipe(yaml.Lookup("spec", "parameters", "keys"))
		if err != nil || banned == nil {
			continue
		}
		severity := fn.SeverityError
		if a, _ := c.Pipe(yaml.Lookup("spec", "enforcementAction")); a != nil {
			switch yaml.GetValue(a) {
			case "warn":
				severity = fn.SeverityWarning
			case "dryrun":
				severity = fn.SeverityInfo
			}
		}
		for _, cm := range rl.Items {
			if cm.GetKind() != "ConfigMap" {
				continue
			}
			data := cm.GetDataMap()
			var used []string
			for _, k := range banned.YNode().Content {
				if _, ok := data[k.Value]; ok {
					used = append(used, fmt.Sprintf("%q", k.Value))
				}
			}
			if len(used) == 0 {
				continue
			}
			r := fn.Result{
				Message:     fmt.Sprintf("The following banned keys are being used in the ConfigMap: {%s}\nviolatedConstraint: %s", strings.Join(used, ", "), c.GetName()),
				Severity:    severity,
				ResourceRef: &fn.ResourceRef{APIVersion: cm.GetApiVersion(), Kind: cm.GetKind(), Name: cm.GetName(), Namespace: cm.GetNamespace()},
			}
			// the catalog's gatekeeper names the resource's file and index
			if p := cm.GetAnnotations()[kioutil.PathAnnotation]; p != "" {
				index, _ := strconv.Atoi(cm.GetAnnotations()[kioutil.IndexAnnotation])
				r.File = &fn.File{Path: p, Index: index}
			}
			rl.Results = append(rl.Results, r)
		}
	}
	return nil
}

// kubeconform checks Deployments against the little of their schema the cases need (selector and
// template required, replicas an integer), reporting what kubeconform reports; kinds it has no
// schema for are skipped, as the function's cases show.
func kubeconform(rl *fn.ResourceList, _ string) error {
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
	return nil
}

// searchReplace puts put-value in the field at by-path (a dotted path) where it holds by-value,
// reporting each change as search-replace does.
func searchReplace(rl *fn.ResourceList, _ string) error {
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
			Message: fmt.Sprintf("Mutated field value to %q", to),
			Field:   &fn.Field{Path: path}, File: &fn.File{Path: it.GetAnnotations()[kioutil.PathAnnotation]},
		})
	}
	return nil
}

// applyReplacements copies a field of one resource into fields of others, for the replacements
// whose field paths are dotted names, a key in brackets among them ("data.[a.b/c]").
func applyReplacements(rl *fn.ResourceList, _ string) error {
	reps, err := rl.FunctionConfig.Pipe(yaml.Lookup("replacements"))
	if err != nil || reps == nil {
		return fmt.Errorf("no replacements: %v", err)
	}
	find := func(sel *yaml.RNode) []*yaml.RNode {
		var out []*yaml.RNode
		kind, name := yaml.GetValue(sel.Field("kind").Value), ""
		if f := sel.Field("name"); f != nil {
			name = yaml.GetValue(f.Value)
		}
		for _, it := range rl.Items {
			if it.GetKind() == kind && (name == "" || it.GetName() == name) {
				out = append(out, it)
			}
		}
		return out
	}
	for _, r := range reps.YNode().Content {
		rep := yaml.NewRNode(r)
		src := rep.Field("source").Value
		from := find(src)
		if len(from) != 1 {
			return fmt.Errorf("replacement source matches %d resources", len(from))
		}
		v, err := from[0].Pipe(yaml.Lookup(fieldPath(yaml.GetValue(src.Field("fieldPath").Value))...))
		if err != nil || v == nil {
			return fmt.Errorf("replacement source field: %v", err)
		}
		for _, t := range rep.Field("targets").Value.YNode().Content {
			target := yaml.NewRNode(t)
			for _, to := range find(target.Field("select").Value) {
				for _, fp := range target.Field("fieldPaths").Value.YNode().Content {
					p := fieldPath(fp.Value)
					if err := to.PipeE(yaml.LookupCreate(yaml.ScalarNode, p...), yaml.FieldSetter{Value: v.Copy()}); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// fieldPath splits a replacement's field path into its fields.
func fieldPath(p string) []string {
	var out []string
	for p != "" {
		if strings.HasPrefix(p, "[") {
			end := strings.Index(p, "]")
			out = append(out, p[1:end])
			p = strings.TrimPrefix(p[end+1:], ".")
			continue
		}
		part, rest, _ := strings.Cut(p, ".")
		out = append(out, part)
		p = rest
	}
	return out
}

package kpt

import (
	"os"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// AttributionAnnotation is the usage annotation kpt's render puts on Config Connector resources.
const AttributionAnnotation = "cnrm.cloud.google.com/blueprint"

// DisableAttributionEnv, set to anything non-empty, leaves AttributionAnnotation out, as it does
// for kpt.
const DisableAttributionEnv = "KRM_DISABLE_ATTRIBUTION"

// attributionGroup is kpt's command group of render (kpt pkg get writes krm-pkg, kpt live init
// krm-live; krm-catalog has neither).
const attributionGroup = "fn"

// attribute marks every Config Connector resource (an apiVersion containing ".cnrm.") of a
// rendered package with AttributionAnnotation, as kpt's render does after its pipelines and before
// it writes, so that a package renders to the same bytes through either tool. Resources whose
// metadata is empty are left alone; an annotation already there keeps its quoting and gains the
// group (recordAction). As in kpt it is best effort: a resource whose annotations cannot be set
// (not a map) is left as it is. getenv is os.Getenv unless a test supplies its own.
func attribute(items []*yaml.RNode, getenv func(string) string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if getenv(DisableAttributionEnv) != "" {
		return
	}
	for _, it := range items {
		if !strings.Contains(it.GetApiVersion(), ".cnrm.") || it.Field(yaml.MetadataField).IsNilOrEmpty() {
			continue
		}
		cur := it.GetAnnotations()[AttributionAnnotation]
		_ = it.PipeE(yaml.SetAnnotation(AttributionAnnotation, recordAction(cur, attributionGroup)))
	}
}

// recordAction adds group to an attribution value as kpt does: "krm-GROUP" when there is none, a
// ",krm-GROUP" part appended to a value without a krm part, and otherwise every part mentioning
// krm rewritten to "krm" followed by the groups (pkg, fn, live, in that order) it or GROUP names.
// As in kpt, the groups accumulate across such parts (a second krm part repeats the first's).
func recordAction(cur, group string) string {
	if cur == "" {
		return "krm-" + group
	}
	if !strings.Contains(cur, "krm-") {
		return cur + ",krm-" + group
	}
	parts := strings.Split(cur, ",")
	krm := []string{"krm"}
	for i, p := range parts {
		if !strings.Contains(p, "krm") {
			continue
		}
		for _, g := range []string{"pkg", "fn", "live"} {
			if strings.Contains(p, g) || group == g {
				krm = append(krm, g)
			}
		}
		parts[i] = strings.Join(krm, "-")
	}
	return strings.Join(parts, ",")
}

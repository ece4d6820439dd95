package kpt

import "sigs.k8s.io/kustomize/kyaml/yaml"

// matches reports whether the selector matches the resource: every field it sets must be equal, and
// every label and annotation it lists present with that value.
func (s Selector) matches(n *yaml.RNode) bool {
	if s.APIVersion != "" && s.APIVersion != n.GetApiVersion() ||
		s.Kind != "" && s.Kind != n.GetKind() ||
		s.Name != "" && s.Name != n.GetName() ||
		s.Namespace != "" && s.Namespace != n.GetNamespace() {
		return false
	}
	if len(s.Labels) > 0 {
		have := n.GetLabels()
		for k, v := range s.Labels {
			if got, ok := have[k]; !ok || got != v {
				return false
			}
		}
	}
	if len(s.Annotations) > 0 {
		have := n.GetAnnotations()
		for k, v := range s.Annotations {
			if got, ok := have[k]; !ok || got != v {
				return false
			}
		}
	}
	return true
}

func anyMatches(sel []Selector, n *yaml.RNode) bool {
	for _, s := range sel {
		if s.matches(n) {
			return true
		}
	}
	return false
}

// selected reports whether a step sees the resource: it matches one of the selectors (or there are
// none) and none of the exclusions.
func (f Function) selected(n *yaml.RNode) bool {
	if len(f.Selectors) > 0 && !anyMatches(f.Selectors, n) {
		return false
	}
	return !anyMatches(f.Exclude, n)
}

// partition splits items into those the step sees and the others, keeping the order of each.
func (f Function) partition(items []*yaml.RNode) (in, out []*yaml.RNode) {
	if len(f.Selectors) == 0 && len(f.Exclude) == 0 {
		return items, nil
	}
	for _, it := range items {
		if f.selected(it) {
			in = append(in, it)
		} else {
			out = append(out, it)
		}
	}
	return in, out
}

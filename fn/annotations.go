package fn

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The path and index of a resource travel in two annotations each: internal.config.kubernetes.io/
// path|index and the legacy config.kubernetes.io/path|index. Functions written against either set
// one of them; kyaml's pipeline (kio.Pipeline, used by kpt) reconciles the two around every
// function, and so does Run:
//
//   - before a step, a missing one is copied from the other, and an item on which they disagree is
//     an error (the intent cannot be inferred);
//   - after it, a missing one is copied from the other; when the function changed only one of them,
//     the other follows (changing only the legacy path moves the resource); when it changed both to
//     different values, that is an error naming both;
//   - the output keeps the form the input used: an annotation form no input item carried is removed
//     again (when no input item carried either, both are kept).

// annotationPair is one of the two reconciled pairs.
type annotationPair struct {
	what, internal, legacy string
}

func annotationPairs() []annotationPair {
	return []annotationPair{
		{"path", kioutil.PathAnnotation, kioutil.LegacyPathAnnotation},
		{"index", kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation},
	}
}

// annotationForm says which forms the input items used.
type annotationForm struct{ internal, legacy bool }

// prepareAnnotations reconciles the items before a step and returns, for each item, its original
// values (by pair) and the form the input used.
func prepareAnnotations(items []*yaml.RNode) ([][]string, annotationForm, error) {
	orig := make([][]string, len(items))
	var form annotationForm
	seen := false
	for i, it := range items {
		hasInternal, hasLegacy := false, false
		orig[i] = make([]string, len(annotationPairs()))
		for j, p := range annotationPairs() {
			in, leg := annotation(it, p.internal), annotation(it, p.legacy)
			hasInternal = hasInternal || in != ""
			hasLegacy = hasLegacy || leg != ""
			if in != "" && leg != "" && in != leg {
				return nil, form, fmt.Errorf("%w: item %d (%s) has mismatched legacy and internal %s annotations: %s is %q, %s is %q",
					ErrInvalidPackage, i, describe(it), p.what, p.legacy, leg, p.internal, in)
			}
			v := in
			if v == "" {
				v = leg
			}
			orig[i][j] = v
			if err := fillAnnotationPair(it, p); err != nil {
				return nil, form, err
			}
		}
		if !hasInternal && !hasLegacy {
			continue
		}
		if seen && (form.internal != hasInternal || form.legacy != hasLegacy) {
			return nil, form, fmt.Errorf("%w: the annotation formatting in the input resources is not consistent: item %d (%s) differs from the items before it in using %s and %s",
				ErrInvalidPackage, i, describe(it), kioutil.PathAnnotation, kioutil.LegacyPathAnnotation)
		}
		seen = true
		form = annotationForm{internal: hasInternal, legacy: hasLegacy}
	}
	if !seen {
		form = annotationForm{internal: true, legacy: true}
	}
	return orig, form, nil
}

func fillAnnotationPair(it *yaml.RNode, p annotationPair) error {
	in, leg := annotation(it, p.internal), annotation(it, p.legacy)
	switch {
	case in == "" && leg != "":
		return setAnnotation(it, p.internal, leg)
	case leg == "" && in != "":
		return setAnnotation(it, p.legacy, in)
	}
	return nil
}

// reconcileAnnotations reconciles an output item after a step. orig are the values its input item
// had (nil for an item the function created).
func reconcileAnnotations(it *yaml.RNode, i int, orig []string, form annotationForm) error {
	for j, p := range annotationPairs() {
		if err := fillAnnotationPair(it, p); err != nil {
			return err
		}
		in, leg := annotation(it, p.internal), annotation(it, p.legacy)
		if orig != nil && orig[j] != "" {
			o := orig[j]
			switch {
			case o != in && o != leg && in != leg:
				return fmt.Errorf("%w: the function changed both %s annotations of output item %d (%s) to different values: %s is %q, %s is %q",
					ErrInvalidPackage, p.what, i, describe(it), p.legacy, leg, p.internal, in)
			case o != in:
				if err := setAnnotation(it, p.legacy, in); err != nil {
					return err
				}
				leg = in
			case o != leg:
				if err := setAnnotation(it, p.internal, leg); err != nil {
					return err
				}
				in = leg
			}
		}
		if in != leg {
			return fmt.Errorf("%w: output item %d (%s) has mismatched legacy and internal %s annotations: %s is %q, %s is %q",
				ErrInvalidPackage, i, describe(it), p.what, p.legacy, leg, p.internal, in)
		}
		var drop []string
		if !form.internal {
			drop = append(drop, p.internal)
		}
		if !form.legacy {
			drop = append(drop, p.legacy)
		}
		if err := clearAnnotations(it, drop...); err != nil {
			return err
		}
	}
	return nil
}

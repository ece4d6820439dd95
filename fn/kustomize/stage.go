package kustomize

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/kustomize/internal/kustrun"
)

// Fields a stage split keeps on one side. Kustomize runs a kustomization in this order: resources,
// generators, components, the built-in transformers its fields configure, the transformers list,
// then validators; a split keeps what comes before the split point in the head and the rest after.
var (
	// generatorFields make resources: they run in the head only.
	generatorFields = []string{"resources", "configMapGenerator", "secretGenerator", "helmCharts", "helmGlobals",
		"helmChartInflationGenerator", "generators", "generatorOptions"}
	// sharedFields configure every stage of the layer.
	sharedFields = []string{"apiVersion", "kind", "metadata", "configurations", "crds", "openapi"}
)

// Names of the files a build holds in memory; the leading dot keeps them from clashing with a
// user's files.
const (
	stageFile  = ".krm-catalog-stage-%d.yaml"
	builtFile  = ".krm-catalog-built.yaml"
	outputFile = ".krm-catalog-output.yaml"
)

// ready makes a layer readable by krusty: its staged bases built, its Compositions in resources
// generated, and its kustomization (catalogs removed) put in memory, unless it is staged itself.
func (b *builder) ready(ctx context.Context, l *layer) error {
	if l.built {
		return nil
	}
	l.built = true
	for _, base := range l.bases {
		if err := b.ready(ctx, base); err != nil {
			return err
		}
		if base.staged() {
			if err := b.prebuild(ctx, base); err != nil {
				return err
			}
		}
	}
	for _, c := range l.comps {
		if err := b.ready(ctx, c); err != nil {
			return err
		}
	}
	if res := fieldValue(l.spec, "resources"); res != nil {
		for _, n := range res.YNode().Content {
			e := l.entries[entryKey("resources", n.Value)]
			if e == nil {
				continue
			}
			items, err := b.run(ctx, e, nil)
			if err != nil {
				return err
			}
			name, err := b.memFile(l.dir, items)
			if err != nil {
				return err
			}
			n.Value = name
		}
	}
	if !l.staged() {
		return b.setFile(l.file, l.spec)
	}
	return nil
}

// prebuild builds a staged base and replaces its kustomization, in memory, by one whose only
// resource is the output: its parents read it as they read any base.
func (b *builder) prebuild(ctx context.Context, l *layer) error {
	out, err := b.buildLayer(ctx, l, l.spec, nil)
	if err != nil {
		return err
	}
	b.fs.Set(filepath.Join(l.dir, builtFile), out)
	b.fs.Set(l.file, []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- "+builtFile+"\n"))
	return nil
}

// buildLayer builds spec (the layer's kustomization or what remains of it after a split) with
// input, kustomize's output of the stages before, prepended to its resources.
func (b *builder) buildLayer(ctx context.Context, l *layer, spec *yaml.RNode, input []byte) ([]byte, error) {
	if err := b.ready(ctx, l); err != nil {
		return nil, err
	}
	// a component that runs functions runs in its place: the head builds what comes before it
	comps := seqStrings(fieldValue(spec, "components"))
	for j, raw := range comps {
		c := b.layers[filepath.Join(l.dir, filepath.FromSlash(raw))]
		if c == nil || !c.staged() {
			continue
		}
		head := without(spec, transformerFields(spec)...)
		setStrings(head, "components", comps[:j])
		out, err := b.krustyStage(l, head, input)
		if err != nil {
			return nil, err
		}
		if out, err = b.buildLayer(ctx, c, c.spec, out); err != nil {
			return nil, err
		}
		rest := without(spec, generatorFields...)
		setStrings(rest, "components", comps[j+1:])
		return b.buildLayer(ctx, l, rest, out)
	}

	// generators that are functions run with no input, as kustomize runs generator plugins; what
	// they make joins the resources
	if gens := seqStrings(fieldValue(spec, "generators")); len(gens) > 0 {
		var keep []string
		var made []string
		for _, raw := range gens {
			e := l.entries[entryKey("generators", raw)]
			if e == nil {
				keep = append(keep, raw)
				continue
			}
			items, err := b.run(ctx, e, nil)
			if err != nil {
				return nil, err
			}
			name, err := b.memFile(l.dir, items)
			if err != nil {
				return nil, err
			}
			made = append(made, name)
		}
		if len(made) > 0 {
			spec = spec.Copy()
			setStrings(spec, "generators", keep)
			setStrings(spec, "resources", append(seqStrings(fieldValue(spec, "resources")), made...))
		}
	}

	// kustomize runs inline transformer configs before those in files
	eff := effectiveOrder(seqStrings(fieldValue(spec, "transformers")))
	for i, raw := range eff {
		if l.entries[entryKey("transformers", raw)] == nil {
			continue
		}
		k := i
		var run []*entry
		for ; k < len(eff); k++ {
			e := l.entries[entryKey("transformers", eff[k])]
			if e == nil {
				break
			}
			run = append(run, e)
		}
		head := without(spec, "validators")
		setStrings(head, "transformers", eff[:i])
		out, err := b.krustyStage(l, head, input)
		if err != nil {
			return nil, err
		}
		items, err := decode(out)
		if err != nil {
			return nil, err
		}
		for _, e := range run {
			if items, err = b.run(ctx, e, items); err != nil {
				return nil, err
			}
		}
		if out, err = encode(items); err != nil {
			return nil, err
		}
		rest := only(spec, append([]string{"transformers", "validators"}, sharedFields...)...)
		setStrings(rest, "transformers", eff[k:])
		if len(eff[k:]) == 0 && len(seqStrings(fieldValue(rest, "validators"))) == 0 {
			return out, nil
		}
		return b.buildLayer(ctx, l, rest, out)
	}

	// validators that are functions run last, over the layer's output, which they must not change
	vals := seqStrings(fieldValue(spec, "validators"))
	var keep []string
	var mine []*entry
	for _, raw := range vals {
		if e := l.entries[entryKey("validators", raw)]; e != nil {
			mine = append(mine, e)
		} else {
			keep = append(keep, raw)
		}
	}
	if len(mine) == 0 {
		return b.krustyStage(l, spec, input)
	}
	head := spec.Copy()
	setStrings(head, "validators", keep)
	out, err := b.krustyStage(l, head, input)
	if err != nil {
		return nil, err
	}
	for _, e := range mine {
		items, err := decode(out)
		if err != nil {
			return nil, err
		}
		if _, err := b.run(ctx, e, items); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// krustyStage builds spec in the layer's directory with kustomize, input first among its
// resources. Stages keep kustomize's input order; the user's ordering applies once, at the end.
func (b *builder) krustyStage(l *layer, spec *yaml.RNode, input []byte) ([]byte, error) {
	s := without(spec, "sortOptions")
	// a Component's stage is a Kustomization over the resources so far
	if err := s.PipeE(yaml.SetField("kind", yaml.NewStringRNode("Kustomization"))); err != nil {
		return nil, err
	}
	if err := s.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("kustomize.config.k8s.io/v1beta1"))); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(input)) > 0 {
		name := fmt.Sprintf(stageFile, b.stage)
		b.stage++
		b.fs.Set(filepath.Join(l.dir, name), input)
		setStrings(s, "resources", append([]string{name}, seqStrings(fieldValue(s, "resources"))...))
	}
	if err := b.setFile(l.file, s); err != nil {
		return nil, err
	}
	opts := *b.krusty
	opts.Reorder = krusty.ReorderOptionNone
	opts.AddManagedbyLabel = false
	out, err := kustrun.Build(b.fs, l.dir, &opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.file, err)
	}
	return out, nil
}

// finish passes a staged build's output through kustomize once more, with the root's sortOptions
// and the user's options: the order and the managed-by label are kustomize's, as is the format.
func (b *builder) finish(root *layer, out []byte) ([]byte, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return out, nil
	}
	b.fs.Set(filepath.Join(root.dir, outputFile), out)
	s := only(root.spec, "sortOptions", "buildMetadata")
	if err := s.PipeE(yaml.SetField("kind", yaml.NewStringRNode("Kustomization"))); err != nil {
		return nil, err
	}
	if err := s.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("kustomize.config.k8s.io/v1beta1"))); err != nil {
		return nil, err
	}
	setStrings(s, "resources", []string{outputFile})
	if err := b.setFile(root.file, s); err != nil {
		return nil, err
	}
	return kustrun.Build(b.fs, root.dir, b.krusty)
}

// run runs an entry's functions (or Composition) over items.
func (b *builder) run(ctx context.Context, e *entry, items []*yaml.RNode) ([]*yaml.RNode, error) {
	for _, d := range e.docs {
		out, results, err := fn.Run(ctx, d.steps, items)
		b.results = append(b.results, results...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.where, err)
		}
		items = out
	}
	return fn.StripInternal(items)
}

// memFile puts resources in a file in memory in dir and returns its name.
func (b *builder) memFile(dir string, items []*yaml.RNode) (string, error) {
	data, err := encode(items)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf(stageFile, b.stage)
	b.stage++
	b.fs.Set(filepath.Join(dir, name), data)
	return name, nil
}

func decode(out []byte) ([]*yaml.RNode, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, nil
	}
	rl, _, err := fn.DecodeInput(out)
	if err != nil {
		return nil, fmt.Errorf("read kustomize output: %w", err)
	}
	return rl.Items, nil
}

func encode(items []*yaml.RNode) ([]byte, error) {
	if len(items) == 0 {
		return nil, nil
	}
	return (&fn.ResourceList{Items: items}).EncodeOutput(fn.Input{Stream: true})
}

// effectiveOrder is the order kustomize runs a transformers list in: inline configs first.
func effectiveOrder(list []string) []string {
	var inline, paths []string
	for _, s := range list {
		if isInline(s) {
			inline = append(inline, s)
		} else {
			paths = append(paths, s)
		}
	}
	return append(inline, paths...)
}

func isInline(s string) bool {
	return bytes.ContainsRune([]byte(s), '\n')
}

// transformerFields are the fields of spec that configure transformers (all but the generator and
// shared ones).
func transformerFields(spec *yaml.RNode) []string {
	fields, _ := spec.Fields()
	var out []string
	for _, f := range fields {
		if !slices.Contains(generatorFields, f) && !slices.Contains(sharedFields, f) && f != "components" {
			out = append(out, f)
		}
	}
	return out
}

// without is a copy of spec without the fields.
func without(spec *yaml.RNode, fields ...string) *yaml.RNode {
	c := spec.Copy()
	for _, f := range fields {
		_ = c.PipeE(yaml.Clear(f))
	}
	return c
}

// only is a copy of spec with only the fields.
func only(spec *yaml.RNode, fields ...string) *yaml.RNode {
	all, _ := spec.Fields()
	var drop []string
	for _, f := range all {
		if !slices.Contains(fields, f) {
			drop = append(drop, f)
		}
	}
	return without(spec, drop...)
}

// setStrings sets a list of strings, or clears the field when the list is empty.
func setStrings(n *yaml.RNode, field string, list []string) {
	if len(list) == 0 {
		_ = n.PipeE(yaml.Clear(field))
		return
	}
	seq := yaml.NewListRNode()
	for _, s := range list {
		node := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
		if bytes.ContainsRune([]byte(s), '\n') {
			node.Style = yaml.LiteralStyle
		}
		seq.YNode().Content = append(seq.YNode().Content, node)
	}
	_ = n.PipeE(yaml.SetField(field, seq))
}

package composition

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/kustomize/internal/kustrun"
)

// isGenerator reports the kustomize built-ins that generate rather than transform; they go in a
// Kustomization's generators field, the others in transformers.
func isGenerator(kind string) bool {
	switch kind {
	case "ConfigMapGenerator", "SecretGenerator", "HelmChartInflationGenerator", "IAMPolicyGenerator":
		return true
	}
	return false
}

// isBuiltin reports whether a transformer is a kustomize built-in: apiVersion builtin, or no
// apiVersion at all, as KEP-2299's reference implementation writes them.
func isBuiltin(cfg *yaml.RNode) bool {
	v := cfg.GetApiVersion()
	return v == BuiltinAPIVersion || v == ""
}

// ResourceGeneratorKind is KEP-2299's built-in generator (alpha): the files it lists become
// resources, as a Kustomization's resources field makes them.
const ResourceGeneratorKind = "ResourceGenerator"

func isResourceGenerator(cfg *yaml.RNode) bool {
	return isBuiltin(cfg) && cfg.GetKind() == ResourceGeneratorKind
}

// isKustomization reports whether a transformer is an inline Kustomization (KEP-2299, beta).
func isKustomization(cfg *yaml.RNode) bool {
	return cfg.GetKind() == "Kustomization" && strings.HasPrefix(cfg.GetApiVersion(), "kustomize.config.k8s.io/")
}

// kustomizeFunction runs kustomize through its API library (krusty) over a Kustomization that
// krm-catalog writes, in memory, into the directory of the composition that declared the
// transformer: the resources so far first, then either the built-in's config (in transformers or
// generators, exactly as kustomize runs a built-in named there) or the inline Kustomization's own
// fields. Files the Kustomization refers to are read from that directory, and only from it
// (kustomize's root-only load restriction); plugins other than built-ins are disabled.
type kustomizeFunction struct {
	dir    string
	config *yaml.RNode
	// outside: the config names files outside dir (from an override in another directory)
	outside bool
}

// Names of the in-memory files; the dot keeps them from clashing with a user's files.
const (
	memInput  = ".krm-catalog-input.yaml"
	memConfig = ".krm-catalog-builtin.yaml"
)

func (k *kustomizeFunction) Run(_ context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	dir, err := filepath.Abs(k.dir)
	if err != nil {
		return nil, err
	}
	mem := map[string][]byte{}
	var kust *yaml.RNode
	switch {
	case isKustomization(k.config):
		kust = k.config.Copy()
	case isResourceGenerator(k.config):
		kust, err = resourceGeneratorKustomization(k.config)
		if err != nil {
			return nil, err
		}
	default:
		kust = yaml.NewMapRNode(nil)
		if err := kust.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("kustomize.config.k8s.io/v1beta1"))); err != nil {
			return nil, err
		}
		if err := kust.PipeE(yaml.SetField("kind", yaml.NewStringRNode("Kustomization"))); err != nil {
			return nil, err
		}
		cfg, err := builtinConfig(k.config).String()
		if err != nil {
			return nil, err
		}
		mem[memConfig] = []byte(cfg)
		field := "transformers"
		if isGenerator(k.config.GetKind()) {
			field = "generators"
		}
		if err := kust.PipeE(yaml.SetField(field, yaml.NewListRNode(memConfig))); err != nil {
			return nil, err
		}
	}
	if len(in.Items) > 0 {
		carried, err := carryIDs(in.Items)
		if err != nil {
			return nil, err
		}
		data, err := (&fn.ResourceList{Items: carried}).EncodeOutput(fn.Input{Stream: true})
		if err != nil {
			return nil, err
		}
		mem[memInput] = data
		// KEP-2299: the resources so far are prepended to the Kustomization's resources
		res, err := kust.Pipe(yaml.LookupCreate(yaml.SequenceNode, "resources"))
		if err != nil {
			return nil, err
		}
		res.YNode().Content = append([]*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: memInput}}, res.YNode().Content...)
	}
	kdata, err := kust.String()
	if err != nil {
		return nil, err
	}
	mem["kustomization.yaml"] = []byte(kdata)

	fsys := kustrun.NewFS()
	for name, data := range mem {
		fsys.Set(filepath.Join(dir, name), data)
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	if k.outside {
		// a transformerOverrides entry named a path from its own file, outside this directory
		opts.LoadRestrictions = types.LoadRestrictionsNone
	}
	opts.PluginConfig = types.DisabledPluginConfig()
	out, err := kustrun.Build(fsys, dir, opts)
	if err != nil {
		return nil, &fn.FunctionError{Err: fmt.Errorf("kustomize: %w", err)}
	}
	list, _, err := fn.DecodeInput(out)
	if err != nil && len(strings.TrimSpace(string(out))) > 0 {
		return nil, &fn.FunctionError{Err: fmt.Errorf("kustomize output: %w", err)}
	}
	res := &fn.ResourceList{APIVersion: in.APIVersion, FunctionConfig: in.FunctionConfig}
	if list != nil {
		res.Items = list.Items
		if err := restoreIDs(res.Items); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// kustomize drops internal.config.kubernetes.io annotations, and with them the id the pipeline
// uses to give each resource back its comments, field order and styles. The id travels through
// kustomize under an ordinary annotation instead.
const (
	idAnnotation      = "internal.config.kubernetes.io/id"
	carrierAnnotation = "krm-catalog.dev/pipeline-id"
)

func carryIDs(items []*yaml.RNode) ([]*yaml.RNode, error) {
	out := make([]*yaml.RNode, len(items))
	for i, it := range items {
		c := it.Copy()
		if id := c.GetAnnotations()[idAnnotation]; id != "" {
			if err := c.PipeE(yaml.SetAnnotation(carrierAnnotation, id)); err != nil {
				return nil, err
			}
		}
		out[i] = c
	}
	return out, nil
}

func restoreIDs(items []*yaml.RNode) error {
	for _, it := range items {
		id := it.GetAnnotations()[carrierAnnotation]
		if id == "" {
			continue
		}
		if err := it.PipeE(yaml.ClearAnnotation(carrierAnnotation)); err != nil {
			return err
		}
		if err := it.PipeE(yaml.SetAnnotation(idAnnotation, id)); err != nil {
			return err
		}
	}
	return nil
}

// builtinConfig is a built-in's config as kustomize loads it: apiVersion builtin (KEP-2299 lets it
// be left out) and a metadata.name (defaulted to the kind in kebab case).
func builtinConfig(cfg *yaml.RNode) *yaml.RNode {
	c := cfg.Copy()
	if c.GetApiVersion() == "" {
		_ = c.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode(BuiltinAPIVersion)))
	}
	if c.GetName() == "" {
		_ = c.PipeE(yaml.SetK8sName(catalog.KebabName(c.GetKind())))
	}
	return c
}

// resourceGeneratorKustomization is the Kustomization that does what a ResourceGenerator asks:
// its files are the resources.
func resourceGeneratorKustomization(cfg *yaml.RNode) (*yaml.RNode, error) {
	kust := yaml.NewMapRNode(nil)
	if err := kust.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("kustomize.config.k8s.io/v1beta1"))); err != nil {
		return nil, err
	}
	if err := kust.PipeE(yaml.SetField("kind", yaml.NewStringRNode("Kustomization"))); err != nil {
		return nil, err
	}
	files := cfg.Field("files")
	if files == nil || files.Value.YNode().Kind != yaml.SequenceNode || len(files.Value.YNode().Content) == 0 {
		return nil, fmt.Errorf("%w: ResourceGenerator needs files: a list of paths", ErrInvalid)
	}
	if err := kust.PipeE(yaml.SetField("resources", files.Value.Copy())); err != nil {
		return nil, err
	}
	return kust, nil
}

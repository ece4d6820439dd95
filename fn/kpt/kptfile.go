// Package kpt renders kpt packages: it reads a package's Kptfile and those of its subpackages, runs
// each pipeline (mutators, then validators) depth-first as `kpt fn render` does, and writes the
// result back through fn's package writer. Steps name a container image, a local executable, or,
// beyond kpt, only a config whose apiVersion and kind the catalogs resolve.
package kpt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/internal/yamlpos"
)

// Sentinel errors.
var (
	// ErrInvalidKptfile: a Kptfile cannot be read as kpt.dev/v1, or a step in it is malformed.
	ErrInvalidKptfile = errors.New("invalid Kptfile")
)

// Names kpt gives things.
const (
	KptfileName       = "Kptfile"
	KptfileAPIVersion = "kpt.dev/v1"
	KptfileKind       = "Kptfile"
	// LocalConfigAnnotation marks resources that are input to functions' configuration, not output.
	LocalConfigAnnotation = "config.kubernetes.io/local-config"
)

// Kptfile is the part of a Kptfile that render reads.
type Kptfile struct {
	Name        string
	Annotations map[string]string
	Pipeline    Pipeline
}

// Pipeline is a package's functions: mutators run in order, then validators.
type Pipeline struct {
	Mutators   []Function `yaml:"mutators"`
	Validators []Function `yaml:"validators"`
}

// Function is one step of a pipeline.
type Function struct {
	// Name is how messages name the step.
	Name string `yaml:"name"`
	// Image is a container image; Exec a local executable and its arguments (needs --allow-exec).
	Image string `yaml:"image"`
	Exec  string `yaml:"exec"`
	// Tag is a version or semver constraint for Image (kpt's `tag`): resolved against the versions
	// the trusted catalogs list for the image, pinned by digest, else against the registry's tags.
	Tag string `yaml:"tag"`
	// Condition is a CEL expression over `resources` (the resources the step would be given, as
	// maps): the step runs only when it yields true, and is recorded as skipped otherwise.
	Condition string `yaml:"condition"`
	// ConfigPath is a file of the package holding the functionConfig; ConfigMap the data of a
	// ConfigMap functionConfig. With neither Image nor Exec, ConfigPath's apiVersion and kind name the
	// function, resolved through the catalogs.
	ConfigPath string            `yaml:"configPath"`
	ConfigMap  map[string]string `yaml:"configMap"`
	// Selectors choose the resources the function sees (any one matching); Exclude removes resources
	// (any one matching) from that choice.
	Selectors []Selector `yaml:"selectors"`
	Exclude   []Selector `yaml:"exclude"`
}

// Selector matches resources by the fields it sets; fields left empty match anything.
type Selector struct {
	APIVersion  string            `yaml:"apiVersion"`
	Kind        string            `yaml:"kind"`
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// Label names the step for messages: its name, else its image or executable, else its config.
func (f Function) Label() string {
	switch {
	case f.Name != "":
		return f.Name
	case f.Image != "":
		return f.Image
	case f.Exec != "":
		return f.Exec
	}
	return f.ConfigPath
}

// stepFields are the fields of a kpt.dev/v1 pipeline step. A field render does not know (kpt's
// newer `condition`, say) is an error: silently running a step the author meant to be conditional
// would change the package in a way nobody asked for.
var stepFields = []string{"name", "image", "tag", "exec", "configPath", "configMap", "selectors", "exclude", "condition"}

// pipelineFields and selectorFields are the fields of a kpt.dev/v1 pipeline and selector; any other
// is an error for the same reason. A selector field render ignored (an old kpt's packagePath, say)
// would leave a selector that matches every resource; a pipeline list it ignored (a proposed
// early-mutators) would silently not run.
var (
	pipelineFields = []string{"mutators", "validators"}
	selectorFields = []string{"apiVersion", "kind", "name", "namespace", "labels", "annotations"}
)

// ParseKptfile reads a Kptfile. Only apiVersion kpt.dev/v1 is read, as kpt reads it.
func ParseKptfile(data []byte) (*Kptfile, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty", ErrInvalidKptfile)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidKptfile, yamlpos.Locate(data, err))
	}
	var head struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name        string            `yaml:"name"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
		Pipeline yaml.Node `yaml:"pipeline"`
	}
	if err := doc.Decode(&head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidKptfile, err)
	}
	if head.Kind != KptfileKind {
		return nil, fmt.Errorf("%w: kind is %q, not %s", ErrInvalidKptfile, head.Kind, KptfileKind)
	}
	if head.APIVersion != KptfileAPIVersion {
		return nil, fmt.Errorf("%w: apiVersion %q is not supported: update the Kptfile to %s", ErrInvalidKptfile, head.APIVersion, KptfileAPIVersion)
	}
	kf := &Kptfile{Name: head.Metadata.Name, Annotations: head.Metadata.Annotations}
	if head.Pipeline.Kind == 0 || head.Pipeline.Tag == "!!null" {
		return kf, nil
	}
	if err := checkFields(&head.Pipeline, "the pipeline", pipelineFields); err != nil {
		return nil, fmt.Errorf("%w: pipeline: %v", ErrInvalidKptfile, err)
	}
	if err := head.Pipeline.Decode(&kf.Pipeline); err != nil {
		return nil, fmt.Errorf("%w: pipeline: %v", ErrInvalidKptfile, err)
	}
	for _, list := range pipelineFields {
		steps := yaml.NewRNode(&head.Pipeline).Field(list)
		if steps == nil {
			continue
		}
		for i, s := range steps.Value.YNode().Content {
			if err := checkStep(s); err != nil {
				return nil, fmt.Errorf("%w: pipeline.%s[%d]: %v", ErrInvalidKptfile, list, i, err)
			}
		}
	}
	for i, f := range kf.Pipeline.Mutators {
		if err := f.check(); err != nil {
			return nil, fmt.Errorf("%w: pipeline.mutators[%d]: %v", ErrInvalidKptfile, i, err)
		}
	}
	for i, f := range kf.Pipeline.Validators {
		if err := f.check(); err != nil {
			return nil, fmt.Errorf("%w: pipeline.validators[%d]: %v", ErrInvalidKptfile, i, err)
		}
	}
	return kf, nil
}

// checkStep checks that a step, and each of its selectors and exclusions, has only known fields.
func checkStep(n *yaml.Node) error {
	if err := checkFields(n, "a step", stepFields); err != nil {
		return err
	}
	for _, list := range []string{"selectors", "exclude"} {
		sel := yaml.NewRNode(n).Field(list)
		if sel == nil || sel.Value.YNode().Kind != yaml.SequenceNode {
			continue
		}
		for i, s := range sel.Value.YNode().Content {
			if err := checkFields(s, "a selector", selectorFields); err != nil {
				return fmt.Errorf("%s[%d]: %v", list, i, err)
			}
		}
	}
	return nil
}

// checkFields reports the keys of a mapping that are not among known; what names the mapping for
// the message.
func checkFields(n *yaml.Node, what string, known []string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s is a mapping", what)
	}
	var unknown []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("field(s) %s not supported (%s has %s)", strings.Join(unknown, ", "), what, strings.Join(known, ", "))
	}
	return nil
}

func (f Function) check() error {
	switch {
	case f.Image != "" && f.Exec != "":
		return errors.New("image and exec are mutually exclusive")
	case strings.ContainsAny(f.Image, " \t\n"):
		// kpt refuses such a Kptfile before rendering
		return fmt.Errorf("image %q is not an image reference", f.Image)
	case f.Tag != "" && f.Image == "":
		return errors.New("tag needs an image")
	case f.Image == "" && f.Exec == "" && f.ConfigPath == "":
		return errors.New("a step needs image, exec, or a configPath whose kind a catalog resolves")
	case f.ConfigPath != "" && len(f.ConfigMap) > 0:
		return errors.New("configPath and configMap are mutually exclusive")
	}
	if f.Condition != "" {
		if _, err := compileCondition(f.Condition); err != nil {
			return err
		}
	}
	return nil
}

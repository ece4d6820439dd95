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
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
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
	Name     string
	Pipeline Pipeline
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
var stepFields = []string{"name", "image", "exec", "configPath", "configMap", "selectors", "exclude"}

// ParseKptfile reads a Kptfile. Only apiVersion kpt.dev/v1 is read, as kpt reads it.
func ParseKptfile(data []byte) (*Kptfile, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty", ErrInvalidKptfile)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidKptfile, err)
	}
	var head struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
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
	kf := &Kptfile{Name: head.Metadata.Name}
	if head.Pipeline.Kind == 0 || head.Pipeline.Tag == "!!null" {
		return kf, nil
	}
	// a pipeline field render does not know (early-mutators, on a kpt branch) would be steps
	// silently not run
	if err := checkFields(&head.Pipeline, "a pipeline is a mapping", pipelineFields); err != nil {
		return nil, fmt.Errorf("%w: pipeline: %v", ErrInvalidKptfile, err)
	}
	if err := head.Pipeline.Decode(&kf.Pipeline); err != nil {
		return nil, fmt.Errorf("%w: pipeline: %v", ErrInvalidKptfile, err)
	}
	for _, list := range []string{"mutators", "validators"} {
		steps := yaml.NewRNode(&head.Pipeline).Field(list)
		if steps == nil {
			continue
		}
		for i, s := range steps.Value.YNode().Content {
			if err := checkFields(s, "a step is a mapping", stepFields); err != nil {
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

// pipelineFields are the fields of a kpt.dev/v1 pipeline.
var pipelineFields = []string{"mutators", "validators"}

// checkFields refuses a mapping with a field that is not one of known.
func checkFields(n *yaml.Node, notMapping string, known []string) error {
	if n.Kind != yaml.MappingNode {
		return errors.New(notMapping)
	}
	var unknown []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		ok := false
		for _, f := range known {
			ok = ok || f == k
		}
		if !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("field(s) %s not supported (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return nil
}

func (f Function) check() error {
	switch {
	case f.Image != "" && f.Exec != "":
		return errors.New("image and exec are mutually exclusive")
	case f.Image == "" && f.Exec == "" && f.ConfigPath == "":
		return errors.New("a step needs image, exec, or a configPath whose kind a catalog resolves")
	case f.ConfigPath != "" && len(f.ConfigMap) > 0:
		return errors.New("configPath and configMap are mutually exclusive")
	}
	return nil
}

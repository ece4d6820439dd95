package resolver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Explicit is a runtime named by the function config itself, which short-circuits the catalogs.
type Explicit struct {
	// Source says where it was found: "runtime field", "annotation config.kubernetes.io/function",
	// "StarlarkRun" or "ConfigMap data.source".
	Source    string
	Container *ExplicitContainer `json:"container,omitempty" yaml:"container,omitempty"`
	Exec      *ExplicitExec      `json:"exec,omitempty" yaml:"exec,omitempty"`
	Starlark  *ExplicitStarlark  `json:"starlark,omitempty" yaml:"starlark,omitempty"`
}

// ExplicitContainer is kustomize's container function spec.
type ExplicitContainer struct {
	Image   string         `json:"image" yaml:"image"`
	Network bool           `json:"network,omitempty" yaml:"network,omitempty"`
	Mounts  []StorageMount `json:"mounts,omitempty" yaml:"mounts,omitempty"`
	Env     []string       `json:"envs,omitempty" yaml:"envs,omitempty"`
}

// StorageMount is a mount a container function asks for (kustomize's StorageMount).
type StorageMount struct {
	Type string `json:"type" yaml:"type"`
	Src  string `json:"src" yaml:"src"`
	Dst  string `json:"dst" yaml:"dst"`
	RW   bool   `json:"rw,omitempty" yaml:"rw,omitempty"`
}

// ExplicitExec is kustomize's exec function spec: a local executable.
type ExplicitExec struct {
	Path string   `json:"path" yaml:"path"`
	Args []string `json:"args,omitempty" yaml:"args,omitempty"`
	Env  []string `json:"envs,omitempty" yaml:"envs,omitempty"`
}

// ExplicitStarlark is a starlark script: a file (Path) or, for StarlarkRun and ConfigMap configs,
// the script carried by the config (Script).
type ExplicitStarlark struct {
	Path   string `json:"path,omitempty" yaml:"path,omitempty"`
	Script string `json:"-" yaml:"-"`
	// Name is what the script is called in its error messages: its config's name, as kpt's starlark
	// function calls it.
	Name string `json:"-" yaml:"-"`
}

// Annotations that name a function's runtime, as kustomize reads them (the second is the older key).
const (
	FunctionAnnotation       = "config.kubernetes.io/function"
	legacyFunctionAnnotation = "config.k8s.io/function"
)

// StarlarkRun is kpt's starlark function config.
const (
	StarlarkRunAPIVersion = "fn.kpt.dev/v1alpha1"
	StarlarkRunKind       = "StarlarkRun"
)

// ExplicitRuntime returns the runtime a function config names itself, or nil when it names none:
//   - a StarlarkRun (fn.kpt.dev/v1alpha1) carries its script in source;
//   - a ConfigMap with data.source carries a starlark script, as kpt's starlark function accepts;
//   - a top-level runtime field (KEP-2299) with container.image, exec.path or starlark.path;
//   - the config.kubernetes.io/function annotation (kustomize's FunctionSpec, as YAML).
//
// A malformed runtime field or annotation is an error, not a silent fall-through to the catalogs.
func ExplicitRuntime(cfg *yaml.RNode) (*Explicit, error) {
	if cfg == nil || cfg.YNode().Kind != yaml.MappingNode {
		return nil, nil
	}
	apiVersion, kind := cfg.GetApiVersion(), cfg.GetKind()
	if apiVersion == StarlarkRunAPIVersion && kind == StarlarkRunKind {
		src, err := cfg.Pipe(yaml.Lookup("source"))
		if err != nil || src == nil || src.YNode().Kind != yaml.ScalarNode || strings.TrimSpace(src.YNode().Value) == "" {
			return nil, fmt.Errorf("%w: a %s needs its script in source", ErrInvalidRuntime, StarlarkRunKind)
		}
		return &Explicit{Source: StarlarkRunKind, Starlark: &ExplicitStarlark{Script: src.YNode().Value, Name: cfg.GetName()}}, nil
	}
	if apiVersion == "v1" && kind == "ConfigMap" {
		if s, ok := cfg.GetDataMap()["source"]; ok && strings.TrimSpace(s) != "" {
			return &Explicit{Source: "ConfigMap data.source", Starlark: &ExplicitStarlark{Script: s, Name: cfg.GetName()}}, nil
		}
	}
	if rt := cfg.Field("runtime"); rt != nil {
		e, err := parseRuntimeField(rt.Value.YNode())
		if err != nil {
			return nil, err
		}
		return e, nil
	}
	anns := cfg.GetAnnotations()
	for _, key := range []string{FunctionAnnotation, legacyFunctionAnnotation} {
		if v, ok := anns[key]; ok {
			return ParseFunctionAnnotation(v)
		}
	}
	return nil, nil
}

// parseRuntimeField reads KEP-2299's top-level runtime field.
func parseRuntimeField(n *yaml.Node) (*Explicit, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("%w: runtime field: %v", ErrInvalidRuntime, err)
	}
	e, err := decodeSpec(b.Bytes(), "runtime field")
	if err != nil {
		return nil, err
	}
	e.Source = "runtime field"
	return e, nil
}

// ParseFunctionAnnotation parses the value of the config.kubernetes.io/function annotation: YAML
// with exactly one of container (image, network, mounts, envs), exec (path, args, envs) or starlark
// (path). Unknown fields are errors, as kustomize reads it strictly.
func ParseFunctionAnnotation(value string) (*Explicit, error) {
	e, err := decodeSpec([]byte(value), "annotation "+FunctionAnnotation)
	if err != nil {
		return nil, err
	}
	e.Source = "annotation " + FunctionAnnotation
	return e, nil
}

// maxSpecBytes bounds a runtime annotation: it is a few lines in practice.
const maxSpecBytes = 64 << 10

func decodeSpec(data []byte, where string) (*Explicit, error) {
	if len(data) > maxSpecBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrInvalidRuntime, where, maxSpecBytes)
	}
	var spec struct {
		Container *ExplicitContainer `yaml:"container"`
		Exec      *ExplicitExec      `yaml:"exec"`
		Starlark  *ExplicitStarlark  `yaml:"starlark"`
		// kustomize's FunctionSpec also has deferFailure, which changes nothing here
		DeferFailure bool `yaml:"deferFailure"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&spec); errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s is empty", ErrInvalidRuntime, where)
	} else if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidRuntime, where, err)
	}
	e := &Explicit{Container: spec.Container, Exec: spec.Exec, Starlark: spec.Starlark}
	n := 0
	if e.Container != nil {
		n++
		if strings.TrimSpace(e.Container.Image) == "" {
			return nil, fmt.Errorf("%w: %s: container needs an image", ErrInvalidRuntime, where)
		}
		for _, m := range e.Container.Mounts {
			if m.Src == "" || m.Dst == "" {
				return nil, fmt.Errorf("%w: %s: a mount needs src and dst", ErrInvalidRuntime, where)
			}
		}
	}
	if e.Exec != nil {
		n++
		if strings.TrimSpace(e.Exec.Path) == "" {
			return nil, fmt.Errorf("%w: %s: exec needs a path", ErrInvalidRuntime, where)
		}
	}
	if e.Starlark != nil {
		n++
		if strings.TrimSpace(e.Starlark.Path) == "" {
			return nil, fmt.Errorf("%w: %s: starlark needs a path", ErrInvalidRuntime, where)
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("%w: %s must name exactly one of container, exec or starlark, not %d", ErrInvalidRuntime, where, n)
	}
	return e, nil
}

// Kind is the runtime kind: container, exec or starlark.
func (e *Explicit) Kind() string {
	switch {
	case e.Container != nil:
		return "container"
	case e.Exec != nil:
		return "exec"
	}
	return "starlark"
}

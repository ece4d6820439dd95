package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// APIVersion is the API group and version of KRMFunctionCatalog and KRMFunctionDefinition.
const APIVersion = "config.kubernetes.io/v1alpha1"

// Document kinds.
const (
	KindCatalog      = "KRMFunctionCatalog"
	KindCatalogShort = "Catalog" // as the KEP's prose spells it; accepted on input
	KindDefinition   = "KRMFunctionDefinition"
	KindResourceList = "ResourceList"
	KindComposition  = "Composition"
)

// Catalog is a KRMFunctionCatalog: a named list of functions.
type Catalog struct {
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels,omitempty"`
	Functions []Function        `json:"functions"`
}

// Definition is a KRMFunctionDefinition: one function on its own.
type Definition struct {
	Name     string   `json:"name,omitempty"`
	Function Function `json:"function"`
}

// Function is the metadata of one KRM function: the group and kind of its functionConfig and its
// versions (KRMFunctionDefinitionSpec).
type Function struct {
	Group       string    `json:"group"`
	Kind        string    `json:"kind"`
	Description string    `json:"description"`
	Publisher   string    `json:"publisher"`
	Home        string    `json:"home,omitempty"`
	Maintainers []string  `json:"maintainers,omitempty"`
	Tags        []string  `json:"tags,omitempty"`
	Versions    []Version `json:"versions"`
	// Pointer is where the function stands in its document.
	Pointer string `json:"-"`
}

// Version is one version of a function's functionConfig and the runtime that implements it.
type Version struct {
	Name string `json:"name"`
	// Schema is the openAPIV3Schema of the functionConfig, nil when there is none.
	Schema                  map[string]any `json:"schema,omitempty"`
	Idempotent              *bool          `json:"idempotent,omitempty"`
	Runtime                 Runtime        `json:"runtime"`
	Usage                   string         `json:"usage,omitempty"`
	Examples                []string       `json:"examples,omitempty"`
	License                 string         `json:"license,omitempty"`
	Maintainers             []string       `json:"maintainers,omitempty"`
	ConformWithSpecVersions []string       `json:"conformWithSpecVersions,omitempty"`
	// Provenance is what the version's SLSA provenance must say, nil when the entry states nothing.
	Provenance *Provenance `json:"provenance,omitempty"`
}

// Provenance is what a catalog entry expects of its artifacts' SLSA provenance.
type Provenance struct {
	// SourceRepository is the repository the artifacts must be built from.
	SourceRepository string `json:"sourceRepository,omitempty"`
}

// APIVersion is the functionConfig apiVersion this version serves: group/version.
func (f Function) APIVersion(v Version) string { return f.Group + "/" + v.Name }

// ID names a function the way people write it: group/Kind.
func (f Function) ID() string { return f.Group + "/" + f.Kind }

// SpecV2 reports whether the version declares the spec v2 server mode.
func (v Version) SpecV2() bool { return slices.Contains(v.ConformWithSpecVersions, "v2") }

// Runtime says how to run a function version. More than one runtime may be given; the runner picks.
type Runtime struct {
	Container *ContainerRuntime `json:"container,omitempty"`
	Exec      *ExecRuntime      `json:"exec,omitempty"`
	Starlark  *StarlarkRuntime  `json:"starlark,omitempty"`
}

// Kinds lists the runtime kinds present, in the order container, exec, starlark.
func (r Runtime) Kinds() []string {
	var k []string
	if r.Container != nil {
		k = append(k, "container")
	}
	if r.Exec != nil {
		k = append(k, "exec")
	}
	if r.Starlark != nil {
		k = append(k, "starlark")
	}
	return k
}

// ContainerRuntime runs the function as a container image.
type ContainerRuntime struct {
	Image string `json:"image"`
	// SHA256 is the image's manifest digest as 64 hex characters (a "sha256:" prefix is removed).
	SHA256              string `json:"sha256,omitempty"`
	RequireNetwork      bool   `json:"requireNetwork,omitempty"`
	RequireStorageMount bool   `json:"requireStorageMount,omitempty"`
}

// PinnedImage returns the image reference pinned by digest (name@sha256:hex) when a digest is known,
// else the image as written.
func (c ContainerRuntime) PinnedImage() string {
	if strings.Contains(c.Image, "@sha256:") || c.SHA256 == "" {
		return c.Image
	}
	return c.Image + "@sha256:" + c.SHA256
}

// Digest is the digest the image runs by ("sha256:…"), or "" when the catalog does not pin it.
// krm-catalog runs catalog images by digest only, so an image without one does not run.
func (c ContainerRuntime) Digest() string {
	if _, d, ok := strings.Cut(c.PinnedImage(), "@"); ok && strings.HasPrefix(d, "sha256:") {
		return d
	}
	return ""
}

// ExecRuntime runs the function as an executable, one per platform.
type ExecRuntime struct {
	Platforms []ExecPlatform `json:"platforms"`
}

// Platform returns the platform for os/arch, if there is one.
func (e ExecRuntime) Platform(os, arch string) (ExecPlatform, bool) {
	for _, p := range e.Platforms {
		if p.OS == os && p.Arch == arch {
			return p, true
		}
	}
	return ExecPlatform{}, false
}

// ExecPlatform is the executable for one os/arch.
type ExecPlatform struct {
	Bin  string `json:"bin"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
	URI  string `json:"uri"`
	// SHA256 is the executable's (or archive's) digest as 64 hex characters.
	SHA256 string `json:"sha256"`
}

// StarlarkRuntime runs the function as a starlark script fetched from URI or Ref.
type StarlarkRuntime struct {
	URI    string `json:"uri,omitempty"`
	Ref    string `json:"ref,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// Digest is what pins the script ("sha256:…"): its sha256, else the digest of its OCI reference;
// "" when nothing pins it.
func (s StarlarkRuntime) Digest() string {
	if s.SHA256 != "" {
		return "sha256:" + s.SHA256
	}
	if _, d, ok := strings.Cut(s.Source(), "@"); ok && strings.HasPrefix(d, "sha256:") {
		return d
	}
	return ""
}

// Source is where the script comes from: the URI, or the OCI reference.
func (s StarlarkRuntime) Source() string {
	if s.URI != "" {
		return s.URI
	}
	return s.Ref
}

// DecodeCatalog reads the typed catalog out of a decoded document. It is lenient: fields of the wrong
// type are left empty, as validation reports them.
func DecodeCatalog(d *Document) (*Catalog, error) {
	if d.Kind != KindCatalog && d.Kind != KindCatalogShort {
		return nil, fmt.Errorf("document %d of %s is a %q, not a %s", d.Index, d.File, d.Kind, KindCatalog)
	}
	meta := obj(d.Value["metadata"])
	c := &Catalog{Name: str(meta["name"]), Labels: strMap(meta["labels"])}
	for i, f := range list(obj(d.Value["spec"])["krmFunctions"]) {
		c.Functions = append(c.Functions, decodeFunction(obj(f), fmt.Sprintf("/spec/krmFunctions/%d", i)))
	}
	return c, nil
}

// DecodeDefinition reads the typed definition out of a decoded document.
func DecodeDefinition(d *Document) (*Definition, error) {
	if d.Kind != KindDefinition {
		return nil, fmt.Errorf("document %d of %s is a %q, not a %s", d.Index, d.File, d.Kind, KindDefinition)
	}
	return &Definition{
		Name:     str(obj(d.Value["metadata"])["name"]),
		Function: decodeFunction(obj(d.Value["spec"]), "/spec"),
	}, nil
}

func decodeFunction(m map[string]any, pointer string) Function {
	f := Function{
		Group:       str(m["group"]),
		Kind:        str(obj(m["names"])["kind"]),
		Description: str(m["description"]),
		Publisher:   str(m["publisher"]),
		Home:        str(m["home"]),
		Maintainers: strList(m["maintainers"]),
		Tags:        strList(m["tags"]),
		Pointer:     pointer,
	}
	for _, v := range list(m["versions"]) {
		f.Versions = append(f.Versions, decodeVersion(obj(v)))
	}
	return f
}

func decodeVersion(m map[string]any) Version {
	v := Version{
		Name:                    str(m["name"]),
		Schema:                  obj(obj(m["schema"])["openAPIV3Schema"]),
		Usage:                   str(m["usage"]),
		Examples:                strList(m["examples"]),
		License:                 str(m["license"]),
		Maintainers:             strList(m["maintainers"]),
		ConformWithSpecVersions: strList(m["conformWithSpecVersions"]),
	}
	if b, ok := m["idempotent"].(bool); ok {
		v.Idempotent = &b
	}
	if p, ok := m["provenance"].(map[string]any); ok {
		v.Provenance = &Provenance{SourceRepository: str(p["sourceRepository"])}
	}
	rt := obj(m["runtime"])
	if c, ok := rt["container"].(map[string]any); ok {
		net, _ := c["requireNetwork"].(bool)
		mount, _ := c["requireStorageMount"].(bool)
		v.Runtime.Container = &ContainerRuntime{Image: str(c["image"]), SHA256: trimDigest(str(c["sha256"])), RequireNetwork: net, RequireStorageMount: mount}
	}
	if e, ok := rt["exec"].(map[string]any); ok {
		v.Runtime.Exec = &ExecRuntime{}
		for _, p := range list(e["platforms"]) {
			pm := obj(p)
			v.Runtime.Exec.Platforms = append(v.Runtime.Exec.Platforms, ExecPlatform{
				Bin: str(pm["bin"]), OS: str(pm["os"]), Arch: str(pm["arch"]), URI: str(pm["uri"]), SHA256: trimDigest(str(pm["sha256"])),
			})
		}
	}
	switch s := rt["starlark"].(type) {
	case string:
		v.Runtime.Starlark = &StarlarkRuntime{URI: s}
	case map[string]any:
		v.Runtime.Starlark = &StarlarkRuntime{URI: str(s["uri"]), Ref: str(s["ref"]), SHA256: trimDigest(str(s["sha256"]))}
	}
	return v
}

func trimDigest(s string) string { return strings.TrimPrefix(s, "sha256:") }

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func strList(v any) []string {
	var out []string
	for _, item := range list(v) {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func strMap(v any) map[string]string {
	m := obj(v)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, val := range m {
		if s, ok := val.(string); ok {
			out[k] = s
		}
	}
	return out
}

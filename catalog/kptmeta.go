package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/krm-catalog/krm-catalog/internal/lazyre"
)

// KptMetadata is what kpt's function catalog says of one function in its metadata.yaml: the image
// without a tag, and the function's description. Fields krm-catalog has no place for (emails) are
// read and left.
type KptMetadata struct {
	// Name is the function's name, from its directory (set-namespace).
	Name               string   `yaml:"-"`
	Image              string   `yaml:"image"`
	Description        string   `yaml:"description"`
	Tags               []string `yaml:"tags"`
	SourceURL          string   `yaml:"sourceURL"`
	ExamplePackageURLs []string `yaml:"examplePackageURLs"`
	License            string   `yaml:"license"`
	Hidden             bool     `yaml:"hidden"`
	Emails             []string `yaml:"emails"`
}

// kptName is a kpt function's name: its directory in kpt's catalog.
var kptName = lazyre.New(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// MaxKptMetadataBytes bounds one metadata.yaml: the real ones are under 1 KiB.
const MaxKptMetadataBytes = 64 << 10

// ParseKptMetadata reads one metadata.yaml of the function name. Unknown fields are errors, so
// that a field kpt adds is noticed rather than dropped.
func ParseKptMetadata(name string, data []byte) (KptMetadata, error) {
	if len(data) > MaxKptMetadataBytes {
		return KptMetadata{}, fmt.Errorf("metadata of %s: %d bytes, above the limit of %d", name, len(data), MaxKptMetadataBytes)
	}
	var m KptMetadata
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return KptMetadata{}, fmt.Errorf("metadata of %s: %w", name, err)
	}
	m.Name = name
	if !kptName().MatchString(name) {
		return KptMetadata{}, fmt.Errorf("metadata of %q: the function's name must be lower-case words joined by '-', as set-namespace", name)
	}
	if m.Image == "" {
		return KptMetadata{}, fmt.Errorf("metadata of %s: no image", name)
	}
	if ref, err := ParseImage(m.Image); err != nil {
		return KptMetadata{}, fmt.Errorf("metadata of %s: image %q: %w", name, m.Image, err)
	} else if ref.Tag != "" || ref.Digest != "" {
		return KptMetadata{}, fmt.Errorf("metadata of %s: image %q has a tag or digest; metadata.yaml names the image alone", name, m.Image)
	}
	return m, nil
}

// KptGroup is the API group of the functions imported from kpt's catalog.
const KptGroup = "fn.kpt.dev"

// KptKind is a function's kind from its kebab-case name: set-namespace is SetNamespace.
func KptKind(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// KptImport is what a catalog imported from kpt's metadata is made of.
type KptImport struct {
	Name      string // the catalog's metadata.name
	Publisher string
	Tag       string // the image tag every function runs by
	Version   string // the functionConfig version of every function
	// Digests pins each function's image at Tag ("sha256:…", by the function's Name); a function
	// without one is written unpinned.
	Digests map[string]string
}

// KptCatalog writes the KRMFunctionCatalog of the functions in metas, in name order: group
// fn.kpt.dev, kind from the name, one version whose runtime is the image at the tag (pinned when
// its digest is known), and the description, tags, license, home (sourceURL) and examples.
func KptCatalog(in KptImport, metas []KptMetadata) ([]byte, error) {
	if len(metas) == 0 {
		return nil, errors.New("import kpt metadata: no functions")
	}
	metas = append([]KptMetadata(nil), metas...)
	sort.Slice(metas, func(i, j int) bool { return metas[i].Name < metas[j].Name })
	type container struct {
		Image string `yaml:"image"`
	}
	type version struct {
		Name     string               `yaml:"name"`
		Runtime  map[string]container `yaml:"runtime"`
		Examples []string             `yaml:"examples,omitempty"`
		License  string               `yaml:"license,omitempty"`
	}
	type function struct {
		Group       string            `yaml:"group"`
		Names       map[string]string `yaml:"names"`
		Description string            `yaml:"description"`
		Publisher   string            `yaml:"publisher"`
		Home        string            `yaml:"home,omitempty"`
		Tags        []string          `yaml:"tags,omitempty"`
		Versions    []version         `yaml:"versions"`
	}
	var fns []function
	for _, m := range metas {
		image := m.Image + ":" + in.Tag
		if d := in.Digests[m.Name]; d != "" {
			image += "@" + d
		}
		fns = append(fns, function{
			Group: KptGroup, Names: map[string]string{"kind": KptKind(m.Name)}, Description: strings.TrimSpace(m.Description),
			Publisher: in.Publisher, Home: m.SourceURL, Tags: m.Tags,
			Versions: []version{{Name: in.Version, Runtime: map[string]container{"container": {Image: image}}, Examples: m.ExamplePackageURLs, License: m.License}},
		})
	}
	doc := map[string]any{
		"apiVersion": APIVersion,
		"kind":       KindCatalog,
		"metadata":   map[string]any{"name": in.Name},
		"spec":       map[string]any{"krmFunctions": fns},
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("import kpt metadata: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("import kpt metadata: %w", err)
	}
	return out.Bytes(), nil
}

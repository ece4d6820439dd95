package krmfn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/pkg/krmfn/yamlfast"
)

// The ResourceList on the wire (KRM Functions Specification v1).
const (
	resourceListAPIVersion       = "config.kubernetes.io/v1"
	resourceListAPIVersionLegacy = "config.kubernetes.io/v1beta1"
	resourceListKind             = "ResourceList"
	// MaxResourceListBytes is the largest ResourceList a function reads: far above real packages,
	// and a bound on the memory a caller can make it use.
	MaxResourceListBytes = 256 << 20
	// maxDepth bounds nesting and alias expansion when a list is read or written as JSON.
	maxDepth = 1000
	// maxAliasExpansion bounds how many nodes aliases may add when a list is written as JSON (a
	// YAML alias bomb would otherwise expand exponentially).
	maxAliasExpansion = 1 << 20
)

// ErrInvalidResourceList is returned for input that is not a ResourceList.
var ErrInvalidResourceList = errors.New("invalid ResourceList")

// Format is a wire format of a ResourceList.
type Format int

// The wire formats: YAML is what every function must accept; JSON is what krm-catalog sends.
const (
	YAML Format = iota
	JSON
)

// ContentType is the media type of the format on the wire (spec v2 server mode).
func (f Format) ContentType() string {
	if f == JSON {
		return "application/json"
	}
	return "text/yaml"
}

// formatOf maps a Content-Type or Accept value to a format. ok is false for media types the spec
// does not allow; "*/*" and "" mean YAML.
func formatOf(mediaType string) (f Format, ok bool) {
	if strings.TrimSpace(mediaType) == "" {
		return YAML, true
	}
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return YAML, false
	}
	switch mt {
	case "application/json":
		return JSON, true
	case "text/yaml", "application/yaml", "application/x-yaml", "*/*":
		return YAML, true
	}
	return YAML, false
}

// ResourceList is what a function gets and gives back. Items keep their yaml.Node trees, so
// comments, field order and styles survive.
type ResourceList struct {
	// APIVersion is the list's apiVersion; empty means config.kubernetes.io/v1.
	APIVersion     string
	Items          []*yaml.RNode
	FunctionConfig *yaml.RNode
	Results        []Result
}

// Severity of a result. Empty means error, the specification's default.
type Severity string

// The severities of the specification.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Result is one result a function reports.
type Result struct {
	Message     string            `yaml:"message" json:"message"`
	Severity    Severity          `yaml:"severity,omitempty" json:"severity,omitempty"`
	ResourceRef *ResourceRef      `yaml:"resourceRef,omitempty" json:"resourceRef,omitempty"`
	Field       *Field            `yaml:"field,omitempty" json:"field,omitempty"`
	File        *File             `yaml:"file,omitempty" json:"file,omitempty"`
	Tags        map[string]string `yaml:"tags,omitempty" json:"tags,omitempty"`
}

// ResourceRef names the object a result is about.
type ResourceRef struct {
	APIVersion string `yaml:"apiVersion" json:"apiVersion"`
	Kind       string `yaml:"kind" json:"kind"`
	Name       string `yaml:"name" json:"name"`
	Namespace  string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
}

// Field names the field a result is about.
type Field struct {
	Path          string `yaml:"path" json:"path"`
	CurrentValue  any    `yaml:"currentValue,omitempty" json:"currentValue,omitempty"`
	ProposedValue any    `yaml:"proposedValue,omitempty" json:"proposedValue,omitempty"`
}

// File names the file of the object a result is about.
type File struct {
	Path  string `yaml:"path" json:"path"`
	Index int    `yaml:"index,omitempty" json:"index,omitempty"`
}

// IsError reports whether the result is an error; a result without a severity is one.
func (r Result) IsError() bool { return r.Severity == SeverityError || r.Severity == "" }

func (r Result) String() string {
	var b strings.Builder
	sev := r.Severity
	if sev == "" {
		sev = SeverityError
	}
	fmt.Fprintf(&b, "[%s]", sev)
	if r.ResourceRef != nil {
		fmt.Fprintf(&b, " %s/%s", r.ResourceRef.Kind, r.ResourceRef.Name)
		if r.ResourceRef.Namespace != "" {
			fmt.Fprintf(&b, " (namespace %s)", r.ResourceRef.Namespace)
		}
	}
	if r.File != nil && r.File.Path != "" {
		fmt.Fprintf(&b, " in %s", r.File.Path)
	}
	if r.Field != nil && r.Field.Path != "" {
		fmt.Fprintf(&b, " at %s", r.Field.Path)
	}
	fmt.Fprintf(&b, ": %s", r.Message)
	return b.String()
}

// DecodeResourceList parses a ResourceList in YAML or JSON (told apart by the first character).
func DecodeResourceList(data []byte) (*ResourceList, Format, error) {
	if len(data) > MaxResourceListBytes {
		return nil, YAML, fmt.Errorf("%w: %d bytes, above the %d byte limit", ErrInvalidResourceList, len(data), MaxResourceListBytes)
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		n, err := decodeJSON(trimmed)
		if err != nil {
			return nil, JSON, fmt.Errorf("%w: %v", ErrInvalidResourceList, err)
		}
		rl, err := fromNode(n)
		return rl, JSON, err
	}
	docs, err := readYAML(data, true)
	if err != nil {
		return nil, YAML, fmt.Errorf("%w: %v", ErrInvalidResourceList, err)
	}
	if len(docs) != 1 {
		return nil, YAML, fmt.Errorf("%w: expected one document of kind %s, got %d documents", ErrInvalidResourceList, resourceListKind, len(docs))
	}
	rl, err := fromNode(docs[0].Content[0])
	return rl, YAML, err
}

// readYAML returns the non-empty documents of data: read by the fast reader when fast is set and
// it takes them (it builds exactly yaml.v3's nodes), else by yaml.v3, which also reports the errors.
// The fast reader is five to six times faster on the YAML Kubernetes configuration is written in;
// a function reads its whole input on every call.
func readYAML(data []byte, fast bool) ([]*yaml.Node, error) {
	if fast {
		var slab yamlfast.Slab
		if docs, _, ok := yamlfast.Read(data, yamlfast.Options{Budget: -1}, &slab); ok {
			return docs, nil
		}
	}
	return yamlfast.ReadV3(data)
}

func fromNode(n *yaml.Node) (*ResourceList, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: the document is not a mapping", ErrInvalidResourceList)
	}
	rl := &ResourceList{}
	kind := ""
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		if val.ShortTag() == "!!null" {
			continue
		}
		switch key {
		case "apiVersion":
			rl.APIVersion = val.Value
		case "kind":
			kind = val.Value
		case "items":
			if val.Kind != yaml.SequenceNode {
				return nil, fmt.Errorf("%w: items is not a list", ErrInvalidResourceList)
			}
			rl.Items = make([]*yaml.RNode, 0, len(val.Content))
			for j, it := range val.Content {
				item, err := checkItem(it, j)
				if err != nil {
					return nil, err
				}
				rl.Items = append(rl.Items, item)
			}
		case "functionConfig":
			if val.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("%w: functionConfig is not an object", ErrInvalidResourceList)
			}
			rl.FunctionConfig = yaml.NewRNode(val)
		case "results":
			if err := val.Decode(&rl.Results); err != nil {
				return nil, fmt.Errorf("%w: results: %v", ErrInvalidResourceList, err)
			}
		}
	}
	if kind != resourceListKind {
		return nil, fmt.Errorf("%w: kind is %q, not %s", ErrInvalidResourceList, kind, resourceListKind)
	}
	switch rl.APIVersion {
	case resourceListAPIVersion, resourceListAPIVersionLegacy, "":
	default:
		return nil, fmt.Errorf("%w: apiVersion %q is neither %s nor %s", ErrInvalidResourceList, rl.APIVersion, resourceListAPIVersion, resourceListAPIVersionLegacy)
	}
	return rl, nil
}

// checkItem wraps an item, checking that it is an object with apiVersion and kind.
func checkItem(n *yaml.Node, i int) (*yaml.RNode, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: item %d is not an object", ErrInvalidResourceList, i)
	}
	rn := yaml.NewRNode(n)
	for _, f := range []string{"apiVersion", "kind"} {
		if fv := rn.Field(f); fv == nil || fv.Value.YNode().Kind != yaml.ScalarNode || fv.Value.YNode().Value == "" {
			return nil, fmt.Errorf("%w: item %d has no %s", ErrInvalidResourceList, i, f)
		}
	}
	return rn, nil
}

// node builds the ResourceList as one mapping. Items are shared, not copied.
func (rl *ResourceList) node() (*yaml.Node, error) {
	apiVersion := rl.APIVersion
	if apiVersion == "" {
		apiVersion = resourceListAPIVersion
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	add := func(k string, v *yaml.Node) { m.Content = append(m.Content, str(k), v) }
	add("apiVersion", str(apiVersion))
	add("kind", str(resourceListKind))
	items := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: make([]*yaml.Node, 0, len(rl.Items))}
	for _, it := range rl.Items {
		items.Content = append(items.Content, it.YNode())
	}
	add("items", items)
	if rl.FunctionConfig != nil {
		add("functionConfig", rl.FunctionConfig.YNode())
	}
	if len(rl.Results) > 0 {
		var rn yaml.Node
		if err := rn.Encode(rl.Results); err != nil {
			return nil, fmt.Errorf("encode results: %w", err)
		}
		add("results", &rn)
	}
	return m, nil
}

// Encode writes the ResourceList in the given format: YAML with two-space indentation and
// sequences indented as Kubernetes tooling writes them, or JSON with the fields in their order.
func (rl *ResourceList) Encode(f Format) ([]byte, error) {
	n, err := rl.node()
	if err != nil {
		return nil, err
	}
	if f == JSON {
		w := jsonWriter{budget: maxAliasExpansion}
		if err := w.node(n, 0); err != nil {
			return nil, fmt.Errorf("encode ResourceList as JSON: %w", err)
		}
		return append(w.b, '\n'), nil
	}
	return encodeYAMLDocument(n, true)
}

// encodeYAMLDocument writes the list n (node's shape) as encodeYAML does, byte for byte: with the
// fast writer when fast is set and it takes n (several times faster than yaml.v3's encoder), else
// item by item when that writes the same (byItem), else whole.
func encodeYAMLDocument(n *yaml.Node, fast bool) ([]byte, error) {
	if fast {
		if b, ok := yamlfast.Append(make([]byte, 0, 64<<10), n, false); ok {
			return b, nil
		}
	}
	var buf bytes.Buffer
	if byItem(n) {
		if err := encodeByItem(&buf, n); err != nil {
			return nil, fmt.Errorf("encode ResourceList as YAML: %w", err)
		}
		return buf.Bytes(), nil
	}
	if err := encodeYAML(&buf, n); err != nil {
		return nil, fmt.Errorf("encode ResourceList as YAML: %w", err)
	}
	return buf.Bytes(), nil
}

// encodeYAML writes n as one YAML document, as Kubernetes tooling lays it out.
func encodeYAML(buf *bytes.Buffer, n *yaml.Node) error {
	enc := yaml.NewEncoder(buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(n); err != nil {
		return err
	}
	return enc.Close()
}

// encodeByItem writes the list n (node's shape) as encodeYAML does, byte for byte, but the fields
// around the items and each item with an encoder of their own: yaml.v3's encoder keeps every event
// it has written until it is closed, so one encoder for the whole list holds, and copies as it
// grows, the events of every item (2.3 to 3.2 times the CPU of this on 1,000 Deployments). An item
// is written at the left margin and indented under `items:` as the list's encoder indents it: the
// encoder wraps no line, so where an item starts changes nothing inside it.
func encodeByItem(buf *bytes.Buffer, n *yaml.Node) error {
	fields := n.Content
	if err := encodeYAML(buf, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: fields[:4]}); err != nil {
		return err
	}
	buf.WriteString("items:\n")
	var item bytes.Buffer
	for _, it := range fields[5].Content {
		item.Reset()
		if err := encodeYAML(&item, it); err != nil {
			return err
		}
		for i, line := range bytes.SplitAfter(item.Bytes(), []byte("\n")) {
			switch {
			case len(line) == 0:
			case i == 0:
				buf.WriteString("- ")
			case line[0] != '\n':
				buf.WriteString("  ")
			}
			buf.Write(line)
		}
	}
	if len(fields) > 6 {
		return encodeYAML(buf, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: fields[6:]})
	}
	return nil
}

// byItem reports whether encodeByItem writes the list n as encodeYAML would: its items are block
// mappings that start with a key and carry no comment, anchor or alias of their own at their top
// (an item's first line is then its first key), and nothing in the list is an anchor or an alias,
// which would tie one item's writing to another's.
func byItem(n *yaml.Node) bool {
	if len(n.Content) < 6 || n.Content[4].Value != "items" {
		return false
	}
	items := n.Content[5]
	if len(items.Content) == 0 {
		return false
	}
	for _, it := range items.Content {
		if it.Kind != yaml.MappingNode || it.Style&yaml.FlowStyle != 0 || len(it.Content) == 0 ||
			it.HeadComment != "" || it.LineComment != "" || it.FootComment != "" ||
			it.Content[0].HeadComment != "" || it.Content[0].Kind != yaml.ScalarNode {
			return false
		}
	}
	return !tied(n, 0)
}

// tied reports whether n holds an anchor or an alias; past a depth no Kubernetes object reaches,
// it says so too, leaving the list to encodeYAML.
func tied(n *yaml.Node, depth int) bool {
	if n.Anchor != "" || n.Kind == yaml.AliasNode || depth > 100 {
		return true
	}
	for _, c := range n.Content {
		if tied(c, depth+1) {
			return true
		}
	}
	return false
}

// decodeJSON reads one JSON value into a node tree, keeping the order of object members: strings
// tagged !!str, numbers !!int or !!float, and true, false and null as themselves.
func decodeJSON(data []byte) (*yaml.Node, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	n, err := jsonValue(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return n, nil
}

func jsonValue(d *json.Decoder, depth int) (*yaml.Node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("JSON nested more than %d levels deep", maxDepth)
	}
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if t == '{' {
			n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		for d.More() {
			if t == '{' {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k.(string)})
			}
			v, err := jsonValue(d, depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if _, err := d.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}, nil
	case json.Number:
		tag := "!!float"
		if _, err := t.Int64(); err == nil {
			tag = "!!int"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}, nil
	default:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
}

// jsonWriter writes a node tree as JSON, mappings in their order.
type jsonWriter struct {
	b      []byte
	budget int
}

func (w *jsonWriter) node(n *yaml.Node, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("YAML nested more than %d levels deep", maxDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			w.b = append(w.b, "null"...)
			return nil
		}
		return w.node(n.Content[0], depth)
	case yaml.AliasNode:
		if w.budget--; w.budget < 0 || n.Alias == nil {
			return fmt.Errorf("line %d: an alias without anchor, or aliases expanding beyond %d nodes", n.Line, maxAliasExpansion)
		}
		return w.node(n.Alias, depth+1)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.ShortTag() == "!!merge" || k.Kind != yaml.ScalarNode {
				return w.decoded(n) // merge keys, or keys JSON has no order for: yaml.v3 resolves them
			}
		}
		w.b = append(w.b, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.str(n.Content[i].Value)
			w.b = append(w.b, ':')
			if err := w.node(n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		w.b = append(w.b, '}')
		return nil
	case yaml.SequenceNode:
		w.b = append(w.b, '[')
		for i, c := range n.Content {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			if err := w.node(c, depth+1); err != nil {
				return err
			}
		}
		w.b = append(w.b, ']')
		return nil
	case yaml.ScalarNode:
		return w.scalar(n)
	}
	w.b = append(w.b, "null"...)
	return nil
}

// scalar writes a scalar by its resolved tag: null, a boolean, a number JSON can hold, else a
// string (a YAML .inf or .nan included). The booleans and decimal integers of resources are written
// as they are, which is what decoding them writes (scalarDecoded), without the decoding.
func (w *jsonWriter) scalar(n *yaml.Node) error {
	tag := n.ShortTag()
	if tag == "!!bool" && (n.Value == "true" || n.Value == "false") || tag == "!!int" && isDecimal(n.Value) {
		w.b = append(w.b, n.Value...)
		return nil
	}
	return w.scalarDecoded(n, tag)
}

// scalarDecoded is scalar through yaml.v3's decoding of the value, for every spelling YAML has.
func (w *jsonWriter) scalarDecoded(n *yaml.Node, tag string) error {
	switch tag {
	case "!!null":
		w.b = append(w.b, "null"...)
		return nil
	case "!!bool":
		var v bool
		if n.Decode(&v) == nil {
			w.b = strconv.AppendBool(w.b, v)
			return nil
		}
	case "!!int", "!!float":
		var v any
		if n.Decode(&v) == nil {
			if b, err := json.Marshal(v); err == nil {
				w.b = append(w.b, b...)
				return nil
			}
		}
	}
	w.str(n.Value)
	return nil
}

// isDecimal reports a decimal integer that an int64 holds, written as JSON writes it: an optional
// minus, no leading zero, at most 18 digits.
func isDecimal(v string) bool {
	d := strings.TrimPrefix(v, "-")
	if d == "" || len(d) > 18 || d[0] == '0' && (len(d) > 1 || d != v) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// str writes s as encoding/json writes a string without HTML escaping: printable ASCII other than
// the quote and the backslash (most strings of a resource) as it is, the rest through the encoder.
func (w *jsonWriter) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			w.strEncoded(s)
			return
		}
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, s...)
	w.b = append(w.b, '"')
}

func (w *jsonWriter) strEncoded(s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	w.b = append(w.b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// decoded writes a mapping through yaml.v3's decoding: the order of its keys is lost.
func (w *jsonWriter) decoded(n *yaml.Node) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		return err
	}
	w.b = append(w.b, b...)
	return nil
}

// jsonable turns yaml.v3's map[any]any values into what encoding/json accepts.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonable(e)
		}
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = jsonable(e)
		}
	}
	return v
}

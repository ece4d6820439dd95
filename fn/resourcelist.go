package fn

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/internal/docbudget"
	"github.com/krm-catalog/krm-catalog/internal/yamlpos"
	"github.com/krm-catalog/krm-catalog/pkg/krmfn/yamlfast"
)

// ResourceList wire constants (KRM Functions Specification v1).
const (
	ResourceListAPIVersion       = "config.kubernetes.io/v1"
	resourceListAPIVersionLegacy = "config.kubernetes.io/v1beta1"
	ResourceListKind             = "ResourceList"
	// MaxResourceListBytes is the largest ResourceList read from a function, a file or standard
	// input. It is far above real packages and keeps a misbehaving function from exhausting memory.
	MaxResourceListBytes = 256 << 20
)

// Format is a wire format of a ResourceList.
type Format int

// The wire formats. YAML is what every function must accept; JSON is what the runner prefers.
const (
	YAML Format = iota
	JSON
)

func (f Format) String() string {
	if f == JSON {
		return "json"
	}
	return "yaml"
}

// ContentType is the media type of the format on the wire (spec v2 server mode).
func (f Format) ContentType() string {
	if f == JSON {
		return "application/json"
	}
	return "text/yaml"
}

// ResourceList is a parsed ResourceList. Items keep their yaml.Node trees, so comments, field order
// and styles survive as long as nobody re-encodes them through a lossy format.
type ResourceList struct {
	// APIVersion is the list's apiVersion; empty means config.kubernetes.io/v1.
	APIVersion     string
	Items          []*yaml.RNode
	FunctionConfig *yaml.RNode
	Results        []Result
	// Stderr is the end of what the function that wrote the list wrote on standard error, set by
	// the runtime (never encoded): a successful step's results keep it, as kpt's do.
	Stderr string
	// SentJSON is set by the runtime when the function was sent the list as JSON (never encoded):
	// the layout of its output (flow or block) is then the wire's, not the package's, and is
	// restored from the input.
	SentJSON bool
	// Exited is set by a runtime that ran the function as a process that exited 0: its exit status
	// is then its verdict (Verdict), and error results it reports are results, not a failure. A
	// call without an exit status (in-process, or a spec v2 server's answer) leaves it unset: its
	// error results fail it.
	Exited bool
}

// Input says how a ResourceList arrived, so that output can take the same shape.
type Input struct {
	Format Format
	// Stream is set when the input was a plain stream of resources rather than a ResourceList.
	Stream bool
}

// DecodeResourceList parses a ResourceList in YAML or JSON (told apart by the first character),
// within DefaultReadLimits.
func DecodeResourceList(data []byte) (*ResourceList, Format, error) {
	return DecodeResourceListContext(context.Background(), data, docbudget.Limits{})
}

// DecodeResourceListContext is DecodeResourceList within limits (zero fields: DefaultReadLimits'),
// stopped when ctx ends. A list past a limit is refused with an error that is both
// ErrInvalidResourceList and docbudget.ErrExceeded, before it is parsed where its scan shows it.
func DecodeResourceListContext(ctx context.Context, data []byte, limits docbudget.Limits) (*ResourceList, Format, error) {
	rl, in, err := newReader(ctx, limits).decode(data, false)
	return rl, in.Format, err
}

// DecodeOutput parses a function's output. sent is the input the function was given, the
// encoding of list (nil: none to compare with). An output item that is, byte for byte, the item
// sent (a validator, a function that left it alone: kyaml's writer and this module's SDK write
// what this package does) is list's own item, not a second reading of the same bytes; only the
// items that changed and the rest of the output are parsed, each changed item on its own where
// that reads it as the whole output would (decodeChanged). Reading 1,000 resources costs about as
// much as a validator's whole run. The strings of the nodes read share out's memory: out must not
// be changed afterwards.
func DecodeOutput(out, sent []byte, list *ResourceList) (*ResourceList, error) {
	if list != nil && len(list.Items) > 0 && FastPathsEnabled() {
		if rl := decodeReusing(out, sent, list); rl != nil {
			return rl, nil
		}
	}
	rd := newReader(context.Background(), docbudget.Limits{})
	rd.alias = true
	rl, _, err := rd.decode(out, false)
	return rl, err
}

// itemsBudget is what DecodeOutput's reading of items one by one may read: DefaultReadLimits'.
func itemsBudget() *docbudget.Meter { return newReader(context.Background(), docbudget.Limits{}).meter }

// wireLayout is how a wire format lays out a ResourceList's items, for DecodeOutput.
type wireLayout struct {
	// span is where the items are (their key included for YAML, the array for JSON), when they
	// have the shape it takes (decodeRest then checks that no other items key follows).
	span func(b []byte) (start, end int, ok bool)
	// split cuts what span found into the items' texts.
	split func(b []byte) [][]byte
	// empty stands for the items when the rest of the output is parsed.
	empty string
	// faithful is whether an item sent reads back as itself (yamlFaithful, jsonFaithful).
	faithful func(n *yaml.Node, depth int) bool
	// json is set for the JSON wire.
	json bool
}

var (
	yamlLayout = wireLayout{span: itemsLines, split: func(b []byte) [][]byte { return splitBlockItems(b[len("items:\n"):]) }, empty: "items: []\n", faithful: yamlFaithful}
	jsonLayout = wireLayout{span: jsonItems, split: splitJSONElements, empty: "[]", faithful: jsonFaithful, json: true}
)

// decodeReusing is DecodeOutput handing back the items that came back as they were sent; nil when
// it cannot, or when none did.
func decodeReusing(out, sent []byte, list *ResourceList) *ResourceList {
	l := yamlLayout
	if len(sent) > 0 && sent[0] == '{' {
		l = jsonLayout
	}
	so, se, ok := l.span(sent)
	oo, oe, ok2 := l.span(out)
	if !ok || !ok2 {
		return nil
	}
	items := make([]*yaml.RNode, len(list.Items))
	if bytes.Equal(out[oo:oe], sent[so:se]) {
		for i, it := range list.Items {
			if !l.faithful(it.Document(), 0) {
				return nil
			}
			items[i] = it
		}
	} else if !decodeChanged(l, out, oo, oe, l.split(sent[so:se]), list, items) {
		return nil
	}
	rest := make([]byte, 0, len(out)-(oe-oo)+len(l.empty))
	rest = append(append(append(rest, out[:oo]...), l.empty...), out[oe:]...)
	rl, ok := decodeRest(rest)
	if !ok {
		return nil
	}
	rl.Items = items
	return rl
}

// decodeChanged fills items from the output's items (out[start:end]), as many as were sent: list's
// own where the text is the one sent, else the item read alone. It reports false when the output
// has another number of items, when none came back as sent, or when an item that changed cannot be
// read alone as the whole output would read it. A YAML item alone is read as within the list when
// the fast reader reads it, from its line (it reads no tag, anchor or alias, nor a comment yaml.v3
// gives a node outside the item: a foot comment, or a head comment at column 0, which itemsLines
// refuses; and it builds what yaml.v3 builds), and no item holds an anchor or an alias: an item
// handed back may refer to an anchor in one that changed. A JSON item is a value of its own.
func decodeChanged(l wireLayout, out []byte, start, end int, sentItems [][]byte, list *ResourceList, items []*yaml.RNode) bool {
	outItems := l.split(out[start:end])
	if len(sentItems) != len(list.Items) || len(outItems) != len(list.Items) {
		return false
	}
	reused := 0
	for i, o := range outItems {
		if bytes.Equal(o, sentItems[i]) && l.faithful(list.Items[i].Document(), 0) {
			items[i] = list.Items[i]
			reused++
		}
	}
	if reused == 0 || !l.json && bytes.ContainsAny(out[start:end], "&*") {
		return false // nothing to gain over reading the whole output, or no item may be read alone
	}
	r := itemReader{json: l.json, meter: itemsBudget()}
	line := 2 + bytes.Count(out[:start], []byte("\n")) // the line the first YAML item starts on
	for i, o := range outItems {
		itemLine := line
		if !l.json {
			line += bytes.Count(o, []byte("\n"))
		}
		if items[i] != nil {
			continue
		}
		n, ok := r.read(o, itemLine)
		if !ok {
			return false
		}
		item, err := checkItem(n, i)
		if err != nil {
			return false
		}
		items[i] = item
	}
	return true
}

// itemReader reads the items of one output alone, sharing its node memory between them, within
// the budget of its meter (past it, an item is not read, and the output is read whole, where the
// budget refuses it).
type itemReader struct {
	json  bool
	slab  nodeSlab
	jp    *jsonParser
	meter *docbudget.Meter
}

// read reads one item: a JSON value, or a YAML block sequence of one item at column 0 that starts
// on the given line of the output, through the fast reader only.
func (r *itemReader) read(text []byte, line int) (*yaml.Node, bool) {
	if r.json {
		if r.jp == nil {
			r.jp = newJSONParser()
			r.jp.meter = r.meter
		}
		n, err := r.jp.decode(text)
		return n, err == nil
	}
	docs, n, ok := readYAMLFastWithin(text, line, &r.slab, r.meter.Remaining())
	if !ok || r.meter.Charge(n) != nil || len(docs) != 1 || docs[0].Content[0].Kind != yaml.SequenceNode || len(docs[0].Content[0].Content) != 1 {
		return nil, false
	}
	return docs[0].Content[0].Content[0], true
}

// decodeRest parses the output with its items taken out; false unless it is a ResourceList with
// one items key (the last of several is the one reading the whole output takes).
func decodeRest(rest []byte) (*ResourceList, bool) {
	trimmed := bytes.TrimLeft(rest, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		rl, _, err := DecodeResourceList(trimmed)
		return rl, err == nil && len(rl.Items) == 0
	}
	docs, err := decodeYAMLDocuments(rest)
	if err != nil || len(docs) != 1 || docs[0].Content[0].Kind != yaml.MappingNode {
		return nil, false
	}
	m, keys := docs[0].Content[0], 0
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "items" {
			keys++
		}
	}
	if keys != 1 || !isResourceList(m) {
		return nil, false
	}
	rl, err := fromNode(m)
	return rl, err == nil && len(rl.Items) == 0
}

// splitBlockItems cuts the lines of a block sequence at column 0 into its items.
func splitBlockItems(b []byte) [][]byte {
	var items [][]byte
	start := 0
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("\n-")) // the vectorised search: this scans whole outputs
		if j < 0 {
			break
		}
		i += j + 1
		items = append(items, b[start:i])
		start = i
	}
	if start < len(b) {
		items = append(items, b[start:])
	}
	return items
}

// splitJSONElements cuts a JSON array of objects and arrays into its elements; nil when anything
// else is between them (a scalar element, a comma missing or too many): the whole output is then
// read, which reports what is wrong. The elements themselves are checked by reading them.
func splitJSONElements(b []byte) [][]byte {
	const (
		first = iota // after '[': an element or ']'
		next         // after an element: ',' or ']'
		elem         // after ',': an element
	)
	if len(b) == 0 || b[0] != '[' {
		return nil
	}
	elems := [][]byte{}
	depth, start, state := 1, 0, first
	for i := 1; i < len(b); i++ {
		c := b[i]
		if depth == 1 {
			switch {
			case isJSONSpace(c):
			case (c == '{' || c == '[') && state != next:
				depth, start = 2, i
			case c == ',' && state == next:
				state = elem
			case c == ']' && state != elem && i == len(b)-1:
				return elems
			default:
				return nil
			}
			continue
		}
		switch c {
		case '"':
			i = jsonStringEnd(b, i)
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 1 {
				elems = append(elems, b[start:i+1])
				state = next
			}
		}
	}
	return nil
}

// jsonStringEnd returns where the JSON string that starts at b[start] (its opening quote) ends:
// the index of its closing quote, or len(b) or more when it does not end.
func jsonStringEnd(b []byte, start int) int {
	i := start + 1
	for i < len(b) && b[i] != '"' {
		if b[i] == '\\' {
			i++
		}
		i++
	}
	return i
}

// jsonItems returns where the array of a JSON ResourceList's "items" key is, brackets included;
// ok is false unless the object has exactly one "items" key (spelt without escapes) and its value
// is an array.
func jsonItems(b []byte) (start, end int, ok bool) {
	depth, key, keys := 0, -1, 0 // key: where the "items" key just read ends, after its colon
	start, end = -1, -1
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			j := jsonStringEnd(b, i)
			if j >= len(b) {
				return 0, 0, false
			}
			key = -1
			if depth == 1 && string(b[i+1:j]) == "items" {
				k := j + 1
				for k < len(b) && isJSONSpace(b[k]) {
					k++
				}
				if k < len(b) && b[k] == ':' {
					key, keys = k+1, keys+1
				}
			}
			i = j
		case '{', '[':
			if depth == 1 && key >= 0 && c == '[' && start < 0 && onlySpace(b[key:i]) {
				start = i
			}
			depth++
		case '}', ']':
			depth--
			if depth == 1 && start >= 0 && end < 0 && c == ']' {
				end = i + 1
			}
			if depth < 0 {
				return 0, 0, false
			}
		}
	}
	return start, end, keys == 1 && start >= 0 && end > start
}

// yamlFaithful reports whether n is what reading its YAML back and restoring it from n (what the
// pipeline does after a function) gives again: no mapping below repeats a key (restoring places
// a field by its key's last place in the input). Only then is an item handed back as sent the
// same as reading it.
func yamlFaithful(n *yaml.Node, depth int) bool {
	if depth > maxJSONDepth || n.Kind == yaml.MappingNode && repeatsKey(n) {
		return false
	}
	for _, c := range n.Content {
		if !yamlFaithful(c, depth+1) {
			return false
		}
	}
	return true
}

// repeatsKey reports whether a mapping holds a key twice.
func repeatsKey(m *yaml.Node) bool {
	if pos := fieldPositions(m); pos != nil { // a large mapping: its index holds each key once
		return len(pos) != len(m.Content)/2
	}
	for i := 2; i+1 < len(m.Content); i += 2 {
		for j := 0; j < i; j += 2 {
			if m.Content[j].Value == m.Content[i].Value {
				return true
			}
		}
	}
	return false
}

// jsonFaithful is yamlFaithful for JSON, which also loses anchors, aliases, explicit tags, merge
// keys, keys that are not strings, and values JSON spells otherwise (0x1F, True, ~, a timestamp).
func jsonFaithful(n *yaml.Node, depth int) bool {
	if depth > maxJSONDepth || n.Anchor != "" || n.Style&yaml.TaggedStyle != 0 {
		return false
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
	case yaml.MappingNode:
		if len(n.Content)%2 != 0 || repeatsKey(n) {
			return false
		}
		for i := 0; i < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" || k.Style&yaml.TaggedStyle != 0 || k.Anchor != "" {
				return false
			}
		}
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return true
		case "!!int", "!!float":
			return isJSONNumber(n.Value)
		case "!!bool":
			return n.Value == "true" || n.Value == "false"
		case "!!null":
			return n.Value == "null"
		}
		return false
	default:
		return false
	}
	for _, c := range n.Content {
		if !jsonFaithful(c, depth+1) {
			return false
		}
	}
	return true
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func onlySpace(b []byte) bool {
	for _, c := range b {
		if !isJSONSpace(c) {
			return false
		}
	}
	return true
}

// itemsLines returns where the items of a YAML ResourceList are, from its "items:" line to the
// next top-level key: a block sequence at column 0 (compact, as kyaml and this package write it),
// every line of which starts with "- ", a space or nothing. A comment or a document marker at
// column 0 could belong to what follows; ok is false then, and for anything else.
func itemsLines(b []byte) (start, end int, ok bool) {
	const key = "items:\n"
	switch {
	case bytes.HasPrefix(b, []byte(key)):
		start = 0
	default:
		i := bytes.Index(b, []byte("\n"+key))
		if i < 0 {
			return 0, 0, false
		}
		start = i + 1
	}
	end = start + len(key)
	for end < len(b) {
		line := b[end:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		switch {
		case line[0] == ' ' || line[0] == '\n' || bytes.HasPrefix(line, []byte("- ")) || bytes.Equal(line, []byte("-\n")):
			end += len(line)
			continue
		case line[0] == '#' || line[0] == '-' || line[0] == '.' || line[0] == '\t' || line[0] == '\r':
			return 0, 0, false
		}
		break
	}
	if end < len(b) && b[end-1] != '\n' {
		return 0, 0, false
	}
	return start, end, end > start+len(key)
}

// DecodeInput parses either a ResourceList or a stream of resources (YAML documents separated by
// ---, or one JSON object), as a command reading standard input accepts both, within
// DefaultReadLimits.
func DecodeInput(data []byte) (*ResourceList, Input, error) {
	return DecodeInputContext(context.Background(), data, docbudget.Limits{})
}

// DecodeInputContext is DecodeInput within limits (zero fields: DefaultReadLimits'), stopped when
// ctx ends; DecodeResourceListContext says how a read past a limit is refused.
func DecodeInputContext(ctx context.Context, data []byte, limits docbudget.Limits) (*ResourceList, Input, error) {
	return newReader(ctx, limits).decode(data, true)
}

// decode reads a ResourceList, or a stream of resources when allowStream is set.
func (rd reader) decode(data []byte, allowStream bool) (*ResourceList, Input, error) {
	if len(data) > MaxResourceListBytes {
		return nil, Input{}, fmt.Errorf("%w: %d bytes, above the %d byte limit", ErrInvalidResourceList, len(data), MaxResourceListBytes)
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		n, err := rd.jsonNode(trimmed)
		if err != nil {
			return nil, Input{Format: JSON}, readError(err)
		}
		if allowStream && !isResourceList(n) {
			item, err := checkItem(n, 0)
			if err != nil {
				return nil, Input{Format: JSON}, err
			}
			return &ResourceList{Items: []*yaml.RNode{item}}, Input{Format: JSON, Stream: true}, nil
		}
		rl, err := fromNode(n)
		return rl, Input{Format: JSON}, err
	}
	docs, err := rd.yamlDocuments(data)
	if err != nil {
		return nil, Input{}, readError(err)
	}
	if len(docs) == 1 && isResourceList(docs[0].Content[0]) {
		rl, err := fromNode(docs[0].Content[0])
		return rl, Input{}, err
	}
	if !allowStream {
		if len(docs) == 0 {
			return nil, Input{}, fmt.Errorf("%w: empty input", ErrInvalidResourceList)
		}
		return nil, Input{}, fmt.Errorf("%w: expected one document of kind %s", ErrInvalidResourceList, ResourceListKind)
	}
	rl := &ResourceList{}
	for i, d := range docs {
		item, err := checkItem(d, i)
		if err != nil {
			return nil, Input{Stream: true}, err
		}
		rl.Items = append(rl.Items, item)
	}
	return rl, Input{Stream: true}, nil
}

// readError is the error of a read that failed: ErrInvalidResourceList, and the budget's or the
// context's error as they are (errors.Is finds both).
func readError(err error) error {
	if errors.Is(err, docbudget.ErrExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrInvalidResourceList, err)
	}
	return fmt.Errorf("%w: %v", ErrInvalidResourceList, err)
}

// decodeYAMLDocuments splits a YAML stream into its non-empty documents, within
// DefaultReadLimits.
func decodeYAMLDocuments(data []byte) ([]*yaml.Node, error) {
	return newReader(context.Background(), docbudget.Limits{}).yamlDocuments(data)
}

// decodeYAMLv3 is decodeYAMLDocuments through yaml.v3 alone (yamlfast.ReadV3), its errors
// located (yamlpos).
func decodeYAMLv3(data []byte) ([]*yaml.Node, error) {
	docs, err := yamlfast.ReadV3(data)
	if err != nil {
		return nil, yamlpos.Locate(data, err)
	}
	return docs, nil
}

func isResourceList(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return false
	}
	k := yaml.NewRNode(n).Field("kind")
	return k != nil && k.Value.YNode().Value == ResourceListKind
}

func fromNode(n *yaml.Node) (*ResourceList, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: the document is a %s, not a mapping", ErrInvalidResourceList, kindName(n.Kind))
	}
	rl := &ResourceList{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		switch key {
		case "apiVersion":
			rl.APIVersion = val.Value
		case "kind":
			if val.Value != ResourceListKind {
				return nil, fmt.Errorf("%w: kind is %q, not %s", ErrInvalidResourceList, val.Value, ResourceListKind)
			}
		case "items":
			if val.ShortTag() == "!!null" {
				continue
			}
			if val.Kind != yaml.SequenceNode {
				return nil, fmt.Errorf("%w: items is a %s, not a list", ErrInvalidResourceList, kindName(val.Kind))
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
			if val.ShortTag() == "!!null" {
				continue
			}
			if val.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("%w: functionConfig is a %s, not an object", ErrInvalidResourceList, kindName(val.Kind))
			}
			rl.FunctionConfig = yaml.NewRNode(val)
		case "results":
			if val.ShortTag() == "!!null" {
				continue
			}
			if val.Kind == yaml.MappingNode {
				// the shape older SDKs write (a named list, results: {name: ..., items: [...]}),
				// which kpt accepts by lifting the items out
				val = mapValue(val, "items")
				if val == nil || val.ShortTag() == "!!null" {
					continue
				}
			}
			if err := val.Decode(&rl.Results); err != nil {
				return nil, fmt.Errorf("%w: results: %v", ErrInvalidResourceList, err)
			}
		}
	}
	switch rl.APIVersion {
	case ResourceListAPIVersion, resourceListAPIVersionLegacy, "":
	default:
		return nil, fmt.Errorf("%w: apiVersion %q is neither %s nor %s", ErrInvalidResourceList, rl.APIVersion, ResourceListAPIVersion, resourceListAPIVersionLegacy)
	}
	return rl, nil
}

// checkItem wraps an item, checking that it is an object with apiVersion and kind.
func checkItem(n *yaml.Node, i int) (*yaml.RNode, error) {
	v := n
	if v.Kind == yaml.DocumentNode && len(v.Content) > 0 {
		v = v.Content[0]
	}
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: item %d is a %s, not an object", ErrInvalidResourceList, i, kindName(v.Kind))
	}
	rn := yaml.NewRNode(n)
	for _, f := range []string{"apiVersion", "kind"} {
		if fv := rn.Field(f); fv == nil || fv.Value.YNode().Kind != yaml.ScalarNode || fv.Value.YNode().Value == "" {
			return nil, fmt.Errorf("%w: item %d has no %s", ErrInvalidResourceList, i, f)
		}
	}
	return rn, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	case yaml.DocumentNode:
		return "document"
	}
	return "empty value"
}

// Node builds the ResourceList as one yaml.Node mapping. Items are shared, not copied.
func (rl *ResourceList) Node() (*yaml.Node, error) {
	apiVersion := rl.APIVersion
	if apiVersion == "" {
		apiVersion = ResourceListAPIVersion
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	add := func(k string, v *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, v)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	add("apiVersion", str(apiVersion))
	add("kind", str(ResourceListKind))
	items := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: make([]*yaml.Node, 0, len(rl.Items))}
	for _, it := range rl.Items {
		items.Content = append(items.Content, it.YNode())
	}
	add("items", items)
	if rl.FunctionConfig != nil {
		add("functionConfig", rl.FunctionConfig.YNode())
	}
	if len(rl.Results) > 0 {
		rs, err := resultsNode(rl.Results)
		if err != nil {
			return nil, err
		}
		add("results", rs)
	}
	return m, nil
}

// Encode writes the ResourceList in the given format.
func (rl *ResourceList) Encode(f Format) ([]byte, error) {
	n, err := rl.Node()
	if err != nil {
		return nil, err
	}
	if f == JSON {
		b, err := AppendJSON(make([]byte, 0, 64<<10), n)
		if err != nil {
			return nil, fmt.Errorf("encode ResourceList as JSON: %w", err)
		}
		return append(b, '\n'), nil
	}
	return EncodeYAML(n)
}

// EncodeYAML writes nodes as a YAML stream, with two-space indentation and sequences indented as
// Kubernetes tooling writes them (kyaml's compact style).
func EncodeYAML(nodes ...*yaml.Node) ([]byte, error) { return encodeYAML(false, nodes...) }

// encodeYAML writes each document with the fast writer when it can (and fast paths are on, see
// NoFastPathsEnv), and with yaml.v3 otherwise; the output is the same either way. wide indents
// sequences inside mappings.
func encodeYAML(wide bool, nodes ...*yaml.Node) ([]byte, error) {
	out := make([]byte, 0, 64<<10)
	fast := FastPathsEnabled()
	for i, n := range nodes {
		if i == sizingItems && len(nodes) > 2*sizingItems {
			out = growFor(out, len(out), i, len(nodes))
		}
		if i > 0 {
			out = append(out, "---\n"...)
		}
		if fast {
			if b, ok := appendYAML(out, n, wide); ok {
				out = b
				continue
			}
		}
		b, err := encodeYAMLv3(n, wide)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

func encodeYAMLv3(n *yaml.Node, wide bool) ([]byte, error) { return yamlfast.EncodeV3(n, wide) }

// EncodeOutput writes the list in the shape it arrived in: a ResourceList, or, for a stream, the
// items alone (YAML documents, or a JSON ResourceList when there is not exactly one JSON item).
func (rl *ResourceList) EncodeOutput(in Input) ([]byte, error) {
	if !in.Stream {
		return rl.Encode(in.Format)
	}
	if in.Format == JSON {
		if len(rl.Items) == 1 {
			b, err := AppendJSON(nil, rl.Items[0].YNode())
			if err != nil {
				return nil, err
			}
			return append(b, '\n'), nil
		}
		return (&ResourceList{Items: rl.Items}).Encode(JSON)
	}
	nodes := make([]*yaml.Node, len(rl.Items))
	for i, it := range rl.Items {
		nodes[i] = it.Document()
	}
	return EncodeYAML(nodes...)
}

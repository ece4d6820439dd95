package fn

import (
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Functions are free to drop comments, reorder fields and re-quote scalars, and JSON on the wire
// drops all three. Like kustomize's function runner, the pipeline tags every item it sends with an
// id annotation and, afterwards, copies comments, field order and scalar styles from each input item
// to the output item with the same id. Only what the function left unchanged is restored: a field it
// removed stays removed, a value it changed keeps its new value.

// idKeys are the annotations that carry the item id (the legacy one for older functions).
func idKeys() []string { return []string{kioutil.IdAnnotation, kioutil.LegacyIdAnnotation} }

// tagged are the items sent to a function, by the id the pipeline gave them, with the values the id
// annotations had before (an orchestrator that runs krm-catalog, such as kustomize running fn proxy,
// uses the same annotations for the same purpose, and gets its own values back).
type tagged struct {
	byID  map[string]*yaml.RNode
	prior map[string][]string // by id: the earlier value of each of idKeys, "" when absent
}

// tagIDs sets an id annotation on each item.
func tagIDs(items []*yaml.RNode) (tagged, error) {
	t := tagged{byID: make(map[string]*yaml.RNode, len(items)), prior: make(map[string][]string, len(items))}
	for i, it := range items {
		id := "krm-catalog-" + strconv.Itoa(i)
		prior := make([]string, len(idKeys()))
		for j, k := range idKeys() {
			prior[j] = annotation(it, k)
			if err := setAnnotation(it, k, id); err != nil {
				return t, err
			}
		}
		t.byID[id] = it
		t.prior[id] = prior
	}
	return t, nil
}

// restoreFromInputs restores each output item (in place in out) from the input item with its id,
// then gives outputs and inputs back the id annotations they had before. layout also restores
// block or flow style, for output of a function that was sent JSON (which a YAML parser reads as
// flow collections, so that a function echoing it writes every collection in flow style).
func restoreFromInputs(t tagged, out []*yaml.RNode, layout bool) error {
	for i, o := range out {
		var err error
		if out[i], err = t.restore(o, layout); err != nil {
			return err
		}
	}
	return t.untagInputs()
}

// restore restores one output item from the input item with its id (restoreFromInputs), and
// gives it back the id annotations it had before.
func (t tagged) restore(o *yaml.RNode, layout bool) (*yaml.RNode, error) {
	id := itemID(o)
	in, ok := t.byID[id]
	if ok {
		o = Restore(in, o)
	} else {
		QuoteLookAlikes(o.YNode()) // a new item: all of it is new
	}
	if layout {
		var from *yaml.Node
		if ok {
			from = in.YNode()
		}
		restoreLayout(from, o.YNode(), 0)
	}
	return o, t.untag(o, id)
}

// untagInputs gives the input items back the id annotations they had before.
func (t tagged) untagInputs() error {
	for id, in := range t.byID {
		if err := t.untag(in, id); err != nil {
			return err
		}
	}
	return nil
}

func (t tagged) untag(n *yaml.RNode, id string) error {
	if err := clearAnnotations(n, idKeys()...); err != nil {
		return err
	}
	for j, v := range t.prior[id] {
		if v != "" {
			if err := setAnnotation(n, idKeys()[j], v); err != nil {
				return err
			}
		}
	}
	return nil
}

// Restore copies comments, the order of mapping keys and scalar styles from one version of a
// resource (from) to another (to) wherever to has the same field, and returns to. Strings that are
// new or changed in to and would read as another type in YAML 1.1 (yes, off, 12:30) are given
// double quotes (see IsYAML11LookAlike). When from is a
// whole YAML document (read from a file) and to is a bare mapping (decoded from a function's
// output), to is wrapped in a document so that the document's own comments (a licence header) keep
// their place. from is not modified.
func Restore(from, to *yaml.RNode) *yaml.RNode {
	fd, td := from.Document(), to.Document()
	if fd.Kind == yaml.DocumentNode && td.Kind != yaml.DocumentNode {
		// kyaml's function runner (kpt's) reads a function's output items as bare mappings and
		// copies the document's head comment onto the mapping: a licence header then sits directly
		// above the first field, the blank line after it gone, and kpt writes it so
		if fd.HeadComment != "" && td.HeadComment == "" {
			td.HeadComment = fd.HeadComment
		}
		td = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{td}}
		to = yaml.NewRNode(td)
		copyComments(&yaml.Node{LineComment: fd.LineComment, FootComment: fd.FootComment}, td)
	} else if fd.Kind == td.Kind && fd.Kind == yaml.DocumentNode {
		copyComments(fd, td)
	}
	restoreNode(from.YNode(), to.YNode(), 0)
	return to
}

func copyComments(from, to *yaml.Node) {
	if to.HeadComment == "" {
		to.HeadComment = from.HeadComment
	}
	if to.LineComment == "" {
		to.LineComment = from.LineComment
	}
	if to.FootComment == "" {
		to.FootComment = from.FootComment
	}
}

func restoreNode(from, to *yaml.Node, depth int) {
	if to == nil || depth > maxJSONDepth || from == to {
		return
	}
	if from == nil || from.Kind != to.Kind {
		if from != nil {
			copyComments(from, to)
		}
		quoteNew(to, depth)
		return
	}
	copyComments(from, to)
	switch to.Kind {
	case yaml.ScalarNode:
		if from.Value == to.Value && from.ShortTag() == to.ShortTag() {
			if to.Style == 0 {
				to.Style = from.Style
			}
		} else {
			quoteLookAlike(to)
		}
	case yaml.SequenceNode:
		if to.Style == 0 {
			to.Style = from.Style & yaml.FlowStyle
		}
		for i, t := range to.Content {
			if i >= len(from.Content) {
				quoteNew(t, depth+1)
				continue
			}
			f := from.Content[i]
			if t.Kind == yaml.ScalarNode && f.Value != t.Value {
				quoteLookAlike(t)
				continue
			}
			restoreNode(f, t, depth+1)
		}
	case yaml.MappingNode:
		if to.Style == 0 {
			to.Style = from.Style & yaml.FlowStyle
		}
		pos := fieldPositions(from)
		// fields the input lacked go last, in their order
		order := func(i int) int {
			if j, ok := fieldIndex(from, pos, to.Content[i].Value); ok {
				return j
			}
			return len(from.Content) + i
		}
		moved, last := false, -1
		for i := 0; i+1 < len(to.Content); i += 2 {
			k, v := to.Content[i], to.Content[i+1]
			o := len(from.Content) + i
			if j, ok := fieldIndex(from, pos, k.Value); ok {
				o = j
				restoreNode(from.Content[j], k, depth+1)
				restoreNode(from.Content[j+1], v, depth+1)
			} else {
				quoteNew(k, depth+1)
				quoteNew(v, depth+1)
			}
			moved = moved || o < last
			last = o
		}
		if moved {
			type pair struct {
				k, v  *yaml.Node
				order int
			}
			pairs := make([]pair, 0, len(to.Content)/2)
			for i := 0; i+1 < len(to.Content); i += 2 {
				pairs = append(pairs, pair{to.Content[i], to.Content[i+1], order(i)})
			}
			sort.SliceStable(pairs, func(a, b int) bool { return pairs[a].order < pairs[b].order })
			for i, p := range pairs {
				to.Content[2*i], to.Content[2*i+1] = p.k, p.v
			}
		}
	case yaml.DocumentNode:
		for i, t := range to.Content {
			if i < len(from.Content) {
				restoreNode(from.Content[i], t, depth+1)
			} else {
				quoteNew(t, depth+1)
			}
		}
	}
}

// fieldPositions indexes the keys of a mapping with more fields than a scan finds quickly; nil for
// the few fields of most mappings.
func fieldPositions(m *yaml.Node) map[string]int {
	if len(m.Content) <= 32 {
		return nil
	}
	pos := make(map[string]int, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		pos[m.Content[i].Value] = i
	}
	return pos
}

// fieldIndex returns the index in m.Content of the key k (its last occurrence, should the mapping
// repeat it), through pos when there is one.
func fieldIndex(m *yaml.Node, pos map[string]int, k string) (int, bool) {
	if pos != nil {
		j, ok := pos[k]
		return j, ok
	}
	for j := (len(m.Content)/2 - 1) * 2; j >= 0; j -= 2 {
		if m.Content[j].Value == k {
			return j, true
		}
	}
	return 0, false
}

// restoreLayout gives each collection of to the block or flow style of the same collection in from,
// and new collections (from nil) block style, as kyaml writes a new resource.
func restoreLayout(from, to *yaml.Node, depth int) {
	if to == nil || depth > maxJSONDepth || from == to {
		return // from == to: an item the function handed back as it was sent (DecodeOutput)
	}
	if from != nil && from.Kind != to.Kind {
		from = nil
	}
	if to.Kind == yaml.MappingNode || to.Kind == yaml.SequenceNode {
		to.Style &^= yaml.FlowStyle
		if from != nil {
			to.Style |= from.Style & yaml.FlowStyle
		}
	}
	switch to.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(to.Content); i += 2 {
			var f *yaml.Node
			if from != nil {
				f = mapValue(from, to.Content[i].Value)
			}
			restoreLayout(f, to.Content[i+1], depth+1)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for i, t := range to.Content {
			var f *yaml.Node
			if from != nil && i < len(from.Content) {
				f = from.Content[i]
			}
			restoreLayout(f, t, depth+1)
		}
	}
}

// annotation returns an annotation's value, or "".
func annotation(n *yaml.RNode, key string) string {
	a := mapValue(mapValue(mapValue(n.YNode(), "metadata"), "annotations"), key)
	if a != nil && a.Kind == yaml.ScalarNode {
		return a.Value
	}
	return ""
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setAnnotation sets one annotation, creating metadata.annotations as needed and keeping the order
// of the existing ones (kyaml's RNode.SetAnnotations rewrites the mapping sorted). It is kyaml's
// yaml.SetAnnotation, done on the nodes where that is plain (a pipeline sets several annotations
// on every resource, and kyaml's filters allocate a dozen objects a call): the same nodes result,
// which TestSetAnnotationAsKyaml and FuzzSetAnnotation check.
func setAnnotation(n *yaml.RNode, key, value string) error {
	if anns := annotationsToSet(n.YNode(), value); anns != nil {
		// kyaml: a new value is a single-quoted string; an existing one takes the new value and
		// keeps its style (its comments go)
		v := yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Style: yaml.SingleQuotedStyle}
		for i := 0; i+1 < len(anns.Content); i += 2 {
			if anns.Content[i].Value == key {
				v.Style = anns.Content[i+1].Style
				*anns.Content[i+1] = v
				return nil
			}
		}
		anns.Content = append(anns.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &v)
		return nil
	}
	return n.PipeE(yaml.SetAnnotation(key, value))
}

// annotationsToSet returns the mapping in which kyaml's SetAnnotation would set an annotation of
// m, creating it as kyaml does, when m is a mapping whose metadata is a mapping that holds
// something and whose annotations, if any, are a mapping that holds something too (kyaml first
// drops an empty metadata or annotations, then creates them again at the end), and value is
// UTF-8 (kyaml stores other bytes as base64 !!binary). Otherwise it returns nil and changes nothing.
func annotationsToSet(m *yaml.Node, value string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode || len(m.Content)%2 != 0 || !utf8.ValidString(value) {
		return nil
	}
	meta := mapValue(m, "metadata")
	if meta == nil || meta.Kind != yaml.MappingNode || len(meta.Content) == 0 || len(meta.Content)%2 != 0 {
		return nil
	}
	anns := mapValue(meta, "annotations")
	switch {
	case anns == nil:
		anns = &yaml.Node{Kind: yaml.MappingNode}
		meta.Content = append(meta.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "annotations"}, anns)
		return anns
	case anns.Kind == yaml.MappingNode && len(anns.Content) > 0 && len(anns.Content)%2 == 0:
		return anns
	}
	return nil
}

// withoutAnnotations is n without the annotations named keys, for writing it out: the nodes on the
// way to metadata.annotations are copies, the rest is shared with n, which stays as it is (a whole
// copy of every resource cost a render a few per cent of its own time). An item holding none of
// them is n itself; a document node, or annotations that are not a mapping (which clearAnnotations
// treats its own way), take a whole copy.
func withoutAnnotations(n *yaml.RNode, keys ...string) (*yaml.RNode, error) {
	top := n.YNode()
	anns := mapValue(mapValue(top, "metadata"), "annotations")
	mapping := anns != nil && anns.Kind == yaml.MappingNode
	if anns == nil || mapping && !slices.ContainsFunc(keys, func(k string) bool { return mapValue(anns, k) != nil }) {
		return n, nil
	}
	var c *yaml.RNode
	if mapping && n.Document() == top {
		c = yaml.NewRNode(copyOnPath(top, "metadata", "annotations"))
	} else {
		c = n.Copy()
	}
	return c, clearAnnotations(c, keys...)
}

// copyOnPath copies m and, key by key, the mapping each key (its first occurrence) leads to, each
// with Content slices of its own; everything else is shared with m.
func copyOnPath(m *yaml.Node, keys ...string) *yaml.Node {
	c := *m
	c.Content = slices.Clone(m.Content)
	if len(keys) == 0 {
		return &c
	}
	for i := 0; i+1 < len(c.Content); i += 2 {
		if c.Content[i].Value == keys[0] {
			if v := c.Content[i+1]; v.Kind == yaml.MappingNode {
				c.Content[i+1] = copyOnPath(v, keys[1:]...)
			}
			break
		}
	}
	return &c
}

// clearAnnotations removes annotations, and the annotations mapping when it is left empty.
func clearAnnotations(n *yaml.RNode, keys ...string) error {
	meta := mapValue(n.YNode(), "metadata")
	anns := mapValue(meta, "annotations")
	if anns == nil {
		return nil
	}
	kept := anns.Content[:0]
	for i := 0; i+1 < len(anns.Content); i += 2 {
		drop := false
		for _, k := range keys {
			if anns.Content[i].Value == k {
				drop = true
				break
			}
		}
		if !drop {
			kept = append(kept, anns.Content[i], anns.Content[i+1])
		}
	}
	dropped := len(kept) < len(anns.Content)
	anns.Content = kept
	if dropped && len(anns.Content) == 0 {
		for i := 0; i+1 < len(meta.Content); i += 2 {
			if meta.Content[i].Value == "annotations" {
				meta.Content = append(meta.Content[:i], meta.Content[i+2:]...)
				break
			}
		}
	}
	return nil
}

package web

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// snippet is one copy-ready text on a function page.
type snippet struct {
	ID    string // element id, which its copy button names
	Title string
	File  string // the file it belongs in; empty for a command
	Intro string
	Text  string
	Note  string
}

// snippetInput is what the snippets of one function version are made of.
type snippetInput struct {
	Base       string // the server's own scheme://host, as the visitor reached it
	Group      string
	Kind       string
	Version    string
	Tags       []string
	Schema     map[string]any
	Runtime    catalog.Runtime
	RawRuntime map[string]any
	// Catalog is the catalog that lists this version; empty when only a definition does, and then
	// the function config carries the runtime itself.
	Catalog string
}

func (in snippetInput) catalogURL() string {
	return in.Base + "/catalogs/" + in.Catalog + "/catalog.yaml"
}

// role is how the function fits into kustomize's and kpt's lists, from its tags.
func (in snippetInput) role() string {
	switch {
	case slices.Contains(in.Tags, "validator"):
		return "validator"
	case slices.Contains(in.Tags, "generator"):
		return "generator"
	}
	return "transformer"
}

func snippets(in snippetInput) []snippet {
	out := []snippet{{
		ID: "snippet-fn-config", Title: "Function config", File: "fn.yaml",
		Intro: "The configuration the function reads: fill in the values. The snippets below refer to this file as fn.yaml.",
		Text:  encodeYAML(functionConfig(in)),
	}}
	if in.Catalog == "" {
		out[0].Note = "No catalog lists this version, so the config names its runtime itself."
	}

	comp := mapping("apiVersion", str2node("kustomize.config.k8s.io/v1alpha1"), "kind", str2node("Composition"))
	if in.Catalog != "" {
		comp.Content = append(comp.Content, scalar("catalogs"), seq(str2node(in.catalogURL())))
	}
	comp.Content = append(comp.Content, scalar("transformers"), seq(functionConfig(in)))
	out = append(out, snippet{
		ID: "snippet-composition", Title: "Composition", File: "composition.yaml",
		Intro: "A Composition (KEP-2299) that runs the function, its runtime resolved through the catalog (KEP-2906). Build it with krm-catalog build DIR --trusted-catalog followed by the catalog's URL, or name it in a Kustomization's transformers.",
		Text:  encodeYAML(comp),
	})

	field := map[string]string{"validator": "validators", "generator": "generators"}[in.role()]
	if field == "" {
		field = "transformers"
	}
	kust := mapping("apiVersion", str2node("kustomize.config.k8s.io/v1beta1"), "kind", str2node("Kustomization"))
	if in.Catalog != "" {
		kust.Content = append(kust.Content, scalar("catalogs"), seq(str2node(in.catalogURL())))
	}
	res := str2node("resources.yaml")
	res.LineComment = "your resources"
	kust.Content = append(kust.Content, scalar("resources"), seq(res), scalar(field), seq(str2node("fn.yaml")))
	out = append(out, snippet{
		ID: "snippet-kustomization", Title: "Kustomization", File: "kustomization.yaml",
		Intro: "A Kustomization that lists fn.yaml among its " + field + " and the catalog that resolves it (KEP-2906). Build it with krm-catalog build DIR --trusted-catalog followed by the catalog's URL: kustomize itself does not read catalogs.",
		Text:  encodeYAML(kust),
	})

	if kpt, ok := kptfile(in); ok {
		out = append(out, kpt)
	}

	var cmd strings.Builder
	cmd.WriteString("krm-catalog fn run app/ --fn-config fn.yaml")
	if in.Catalog != "" {
		fmt.Fprintf(&cmd, " \\\n  --catalog %s \\\n  --trusted-catalog %s", in.catalogURL(), in.catalogURL())
	}
	out = append(out, snippet{
		ID: "snippet-fn-run", Title: "Run it with krm-catalog",
		Intro: "Runs the function over the resources in app/, resolving its runtime from this server's catalog.",
		Text:  cmd.String() + "\n",
	})
	return out
}

// kptfile is a Kptfile pipeline with the function as its one step, pinned by digest. kpt runs
// container images and local executables; it has no step for a starlark script.
func kptfile(in snippetInput) (snippet, bool) {
	s := snippet{ID: "snippet-kptfile", Title: "kpt pipeline", File: "Kptfile",
		Intro: "A kpt package pipeline with the function as a step, pinned to what the catalog lists."}
	var step *yaml.Node
	switch rt := in.Runtime; {
	case rt.Container != nil:
		step = mapping("image", str2node(rt.Container.PinnedImage()))
	case rt.Exec != nil && len(rt.Exec.Platforms) > 0:
		p := rt.Exec.Platforms[0]
		if lp, ok := rt.Exec.Platform("linux", "amd64"); ok {
			p = lp
		}
		bin := p.Bin
		if bin == "" {
			bin = strings.ToLower(in.Kind)
		}
		step = mapping("exec", str2node("./bin/"+bin))
		s.Note = fmt.Sprintf("kpt runs a local executable: download %s (%s/%s) and check its sha256 %s before you run it.", p.URI, p.OS, p.Arch, p.SHA256)
	default:
		return snippet{}, false
	}
	step.Content = append(step.Content, scalar("configPath"), str2node("fn.yaml"))
	list := "mutators"
	if in.role() == "validator" {
		list = "validators"
	}
	doc := mapping(
		"apiVersion", str2node("kpt.dev/v1"),
		"kind", str2node("Kptfile"),
		"metadata", mapping("name", str2node("app")),
		"pipeline", mapping(list, seq(step)),
	)
	s.Text = encodeYAML(doc)
	return s, true
}

// functionConfig is the function's config with the required fields filled with their defaults or
// placeholders, and its runtime when no catalog can supply it.
func functionConfig(in snippetInput) *yaml.Node {
	n := mapping(
		"apiVersion", str2node(in.Group+"/"+in.Version),
		"kind", str2node(in.Kind),
		"metadata", mapping("name", str2node(catalog.KebabName(in.Kind))),
	)
	if in.Catalog == "" && len(in.RawRuntime) > 0 {
		rt := &yaml.Node{}
		if err := rt.Encode(in.RawRuntime); err == nil {
			n.Content = append(n.Content, scalar("runtime"), rt)
		}
	}
	example, _ := exampleObject(in.Schema, 0, true)
	n.Content = append(n.Content, example.Content...)
	n.FootComment = example.FootComment
	return n
}

// exampleValue is a value for a required field that its schema accepts: its default, its example,
// its first allowed value, or a value of its type. A string with none of these has no value to
// offer ("" is refused by most schemas: a pattern, a minimum length), nor has an object with such
// a field: ok is false, and the field is left for the user to fill in.
func exampleValue(s map[string]any, depth int) (n *yaml.Node, ok bool) {
	for _, key := range []string{"default", "example"} {
		if d, has := s[key]; has {
			n := &yaml.Node{}
			if err := n.Encode(d); err == nil {
				return n, true
			}
		}
	}
	if enum, has := s["enum"].([]any); has && len(enum) > 0 {
		n := &yaml.Node{}
		if err := n.Encode(enum[0]); err == nil {
			return n, true
		}
	}
	switch t, _ := s["type"].(string); t {
	case "integer", "number":
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "0"}, true
	case "boolean":
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"}, true
	case "array":
		items, _ := s["items"].(map[string]any)
		if item, ok := exampleObject(items, depth+1, false); ok && len(item.Content) > 0 {
			return seq(item), true
		}
		return &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}, true
	case "object", "":
		if obj, ok := exampleObject(s, depth+1, false); !ok {
			return nil, false
		} else if len(obj.Content) > 0 || t == "object" {
			return obj, true
		}
	}
	return nil, false
}

// exampleObject fills an object schema's required properties, each with a comment from its
// description. An object with nothing required is written as {}. A required property without a
// value to offer is left out: at the root it is named in a comment where it would be, so that the
// snippet stays valid YAML the user completes; below the root the object is left out (ok false).
func exampleObject(s map[string]any, depth int, root bool) (*yaml.Node, bool) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	props, _ := s["properties"].(map[string]any)
	req, _ := s["required"].([]any)
	if depth > 6 {
		return n, true
	}
	var pending []string // comments for the fields left out, put before the next field
	for _, r := range req {
		name, _ := r.(string)
		if name == "" || root && (name == "apiVersion" || name == "kind" || name == "metadata") {
			continue
		}
		prop, _ := props[name].(map[string]any)
		v, ok := exampleValue(prop, depth)
		if !ok {
			if !root {
				return n, false
			}
			pending = append(pending, fillIn(name, prop))
			continue
		}
		if v.Kind == yaml.ScalarNode || v.Style == yaml.FlowStyle {
			v.LineComment = shortDescription(str(prop["description"]))
		}
		key := scalar(name)
		key.HeadComment = strings.Join(pending, "\n")
		pending = nil
		n.Content = append(n.Content, key, v)
	}
	n.FootComment = strings.Join(pending, "\n")
	if len(n.Content) == 0 && !root {
		n.Style = yaml.FlowStyle
	}
	return n, true
}

// fillIn is the comment that stands for a required field the snippet cannot give a value.
func fillIn(name string, prop map[string]any) string {
	c := name + ": (required " + typeOf(prop) + ", fill in)"
	if d := shortDescription(str(prop["description"])); d != "" {
		c += " " + d
	}
	return c
}

// shortDescription is the first sentence of a description, cut to fit beside a value.
func shortDescription(d string) string {
	d = strings.Join(strings.Fields(d), " ")
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i+1]
	}
	if r := []rune(d); len(r) > 72 {
		d = strings.TrimSpace(string(r[:71])) + "…"
	}
	return d
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// str2node is a string value, quoted when YAML would read it as something else.
func str2node(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

func seq(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Content: items}
}

// mapping builds a mapping from key, value pairs, in order.
func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, scalar(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

func encodeYAML(n *yaml.Node) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		// only a node this file built wrongly gets here
		return "# " + err.Error() + "\n"
	}
	_ = enc.Close()
	return b.String()
}

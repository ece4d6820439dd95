package runner

// Checking a functionConfig against the OpenAPI schema its function version declares.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/resolver"
	"github.com/krm-catalog/krm-catalog/schemas"
)

// validate checks the config against the version's openAPIV3Schema. As the Kubernetes API server
// does for custom resources, apiVersion, kind and metadata are checked only when the schema
// describes them.
func (r *Runner) validate(res *resolver.Resolution, cfg *yaml.RNode) ([]fn.Result, error) {
	key := res.Catalog + "\x00" + res.Function.ID() + "\x00" + res.Version.Name
	r.mu.Lock()
	s, ok := r.schemas[key]
	r.mu.Unlock()
	if !ok {
		compiled, problems := schemas.CompileOpenAPIV3(res.Version.Schema)
		if len(problems) > 0 {
			return nil, fmt.Errorf("the catalog's openAPIV3Schema does not compile: %s", problems[0].Message)
		}
		s = compiled
		r.mu.Lock()
		r.schemas[key] = s
		r.mu.Unlock()
	}
	instance, err := jsonValue(withoutRuntimeField(cfg))
	if err != nil {
		return nil, err
	}
	m, _ := instance.(map[string]any)
	props, _ := res.Version.Schema["properties"].(map[string]any)
	for _, k := range []string{"apiVersion", "kind", "metadata"} {
		if _, described := props[k]; !described {
			delete(m, k)
		}
	}
	var out []fn.Result
	for _, v := range s.Validate(instance) {
		field := pointerToPath(v.Pointer)
		msg := "functionConfig field " + field + ": " + v.Message
		if field == "" { // the config as a whole: "functionConfig: missing properties: 'x'"
			msg = "functionConfig" + strings.TrimPrefix(v.Message, schemas.Subject(""))
		}
		out = append(out, fn.Result{
			Message:  msg,
			Severity: fn.SeverityError,
			ResourceRef: &fn.ResourceRef{
				APIVersion: cfg.GetApiVersion(), Kind: cfg.GetKind(), Name: cfg.GetName(), Namespace: cfg.GetNamespace(),
			},
			Field: &fn.Field{Path: field},
		})
	}
	return out, nil
}

func jsonValue(n *yaml.RNode) (any, error) {
	b, err := fn.AppendJSON(nil, n.YNode())
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// pointerToPath turns a JSON pointer into the dotted path results use: /spec/ports/0 -> spec.ports[0].
func pointerToPath(p string) string {
	if p == "" || p == "/" {
		return ""
	}
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		tok = schemas.UnescapeToken(tok)
		if isIndex(tok) && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

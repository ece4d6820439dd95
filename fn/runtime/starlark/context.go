package starlark

import (
	"encoding/json"
	"fmt"
	"sync"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// scriptContext is the script's ctx: resource_list, open_api and environment, as in kpt's starlark
// function. open_api is built when a script first reads it: the Kubernetes OpenAPI document kyaml
// embeds (the one kpt's function exposes) costs tens of milliseconds to turn into starlark values,
// which scripts that do not read it should not pay.
type scriptContext struct {
	resourceList starlark.Value
	environment  starlark.Value
	openAPI      starlark.Value
}

// openAPIJSON is kyaml's embedded Kubernetes OpenAPI document as JSON. It is the same for every
// script of the process, so it is computed once (an immutable memo, not state).
var openAPIJSON = sync.OnceValues(func() (string, error) {
	b, err := json.Marshal(openapi.Schema())
	return string(b), err
})

var _ starlark.HasAttrs = (*scriptContext)(nil)

func (c *scriptContext) Attr(name string) (starlark.Value, error) {
	switch name {
	case "resource_list":
		return c.resourceList, nil
	case "environment":
		// kpt gives the container's environment; the user's own is not the script's business
		return c.environment, nil
	case "open_api":
		if c.openAPI == nil {
			doc, err := openAPIJSON()
			if err != nil {
				return nil, fmt.Errorf("ctx.open_api: %w", err)
			}
			v, err := starlark.Call(&starlark.Thread{Name: "open_api"}, starjson.Module.Members["decode"], starlark.Tuple{starlark.String(doc)}, nil)
			if err != nil {
				return nil, fmt.Errorf("ctx.open_api: %w", err)
			}
			c.openAPI = v
		}
		return c.openAPI, nil
	}
	return nil, nil
}

func (c *scriptContext) AttrNames() []string {
	return []string{"environment", "open_api", "resource_list"}
}
func (c *scriptContext) String() string        { return "ctx" }
func (c *scriptContext) Type() string          { return "struct" }
func (c *scriptContext) Freeze()               {}
func (c *scriptContext) Truth() starlark.Bool  { return true }
func (c *scriptContext) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: ctx") }

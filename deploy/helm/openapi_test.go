package helm

import (
	"testing"

	"fmt"
	"github.com/google/go-cmp/cmp"
	"math"
	"slices"
	"sort"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// schemaVersion is the Kubernetes release whose OpenAPI schema kyaml carries.
const schemaVersion = "v1.21.2"

// newerThanSchema are the fields the chart uses that Kubernetes added after schemaVersion, by the
// definition they belong to; the checker accepts them as objects of the shape given and checks
// nothing below them. A field not listed here and not in the schema is an error.
var newerThanSchema = map[string]map[string]func(any) error{
	// gRPC probes: beta in 1.24, GA in 1.27
	"io.k8s.api.core.v1.Probe": {"grpc": func(v any) error {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("grpc probe: not an object")
		}
		if _, ok := m["port"].(int); !ok || len(m) > 2 {
			return fmt.Errorf("grpc probe: want {port: int, service?: string}, got %v", m)
		}
		return nil
	}},
}

// schemaTypeMeta maps kinds newer than schemaVersion to the schema of the same shape it carries:
// autoscaling/v2 (GA in 1.23) is autoscaling/v2beta2 promoted, with the fields the chart uses
// unchanged.
var schemaTypeMeta = map[yaml.TypeMeta]yaml.TypeMeta{
	{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"}: {APIVersion: "autoscaling/v2beta2", Kind: "HorizontalPodAutoscaler"},
}

// checkSchema checks obj against kyaml's Kubernetes OpenAPI schema for its kind: types, formats of
// integers, required fields, enums, and no field the schema does not know (the API server's
// strict field validation). It returns one message per problem, with the field's path.
func checkSchema(obj map[string]any) ([]string, error) {
	tm := yaml.TypeMeta{APIVersion: fmt.Sprint(obj["apiVersion"]), Kind: fmt.Sprint(obj["kind"])}
	if other, ok := schemaTypeMeta[tm]; ok {
		tm = other
	}
	rs := openapi.SchemaForResourceType(tm)
	if rs == nil {
		return nil, fmt.Errorf("no schema for %s %s in kyaml's Kubernetes %s", tm.APIVersion, tm.Kind, schemaVersion)
	}
	c := &checker{root: openapi.Schema()}
	c.check(rs.Schema, "", obj, "")
	return c.problems, nil
}

type checker struct {
	root     *spec.Schema
	problems []string
}

func (c *checker) errorf(path, format string, args ...any) {
	c.problems = append(c.problems, path+": "+fmt.Sprintf(format, args...))
}

func (c *checker) resolve(s *spec.Schema) (*spec.Schema, string) {
	name := ""
	for s.Ref.String() != "" {
		name = strings.TrimPrefix(s.Ref.String(), "#/definitions/")
		r, err := openapi.Resolve(&s.Ref, c.root)
		if err != nil || r == nil {
			c.errorf("", "unresolvable %s", s.Ref.String())
			return &spec.Schema{}, name
		}
		s = r
	}
	return s, name
}

func (c *checker) check(s *spec.Schema, def string, v any, path string) {
	s, name := c.resolve(s)
	if name != "" {
		def = name
	}
	if v == nil {
		return // null is what an omitted optional field renders as
	}
	if s.Format == "int-or-string" {
		switch v.(type) {
		case int, string:
		default:
			c.errorf(path, "want an integer or a string, got %T", v)
		}
		return
	}
	switch {
	case s.Type.Contains("object") || len(s.Properties) > 0:
		m, ok := v.(map[string]any)
		if !ok {
			c.errorf(path, "want an object, got %T", v)
			return
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				c.errorf(path, "required field %q missing", r)
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "." + k
			if prop, ok := s.Properties[k]; ok {
				c.check(&prop, def, m[k], p)
				continue
			}
			if newer, ok := newerThanSchema[def][k]; ok {
				if err := newer(m[k]); err != nil {
					c.errorf(p, "%v", err)
				}
				continue
			}
			if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				c.check(s.AdditionalProperties.Schema, def, m[k], p)
				continue
			}
			if s.AdditionalProperties != nil && s.AdditionalProperties.Allows || len(s.Properties) == 0 {
				continue // a free-form object
			}
			c.errorf(p, "unknown field (in %s)", def)
		}
	case s.Type.Contains("array"):
		l, ok := v.([]any)
		if !ok {
			c.errorf(path, "want an array, got %T", v)
			return
		}
		if s.Items != nil && s.Items.Schema != nil {
			for i, e := range l {
				c.check(s.Items.Schema, def, e, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	case s.Type.Contains("string"):
		str, ok := v.(string)
		if !ok {
			c.errorf(path, "want a string, got %T (%v)", v, v)
			return
		}
		if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return e == str }) {
			c.errorf(path, "%q is not one of %v", str, s.Enum)
		}
	case s.Type.Contains("integer"):
		n, ok := v.(int)
		if !ok {
			c.errorf(path, "want an integer, got %T (%v)", v, v)
			return
		}
		if s.Format == "int32" && (n > math.MaxInt32 || n < math.MinInt32) {
			c.errorf(path, "%d does not fit int32", n)
		}
	case s.Type.Contains("number"):
		switch v.(type) {
		case int, float64:
		default:
			c.errorf(path, "want a number, got %T", v)
		}
	case s.Type.Contains("boolean"):
		if _, ok := v.(bool); !ok {
			c.errorf(path, "want a boolean, got %T (%v)", v, v)
		}
	}
}

func TestCheckSchema(t *testing.T) {
	t.Parallel()
	deployment := func(container string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - ` + container + "\n"
	}
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"valid", deployment(`{name: c, image: i, ports: [{containerPort: 8080}], readinessProbe: {httpGet: {path: /readyz, port: http}}, livenessProbe: {grpc: {port: 9445}}}`), nil},
		{"a misspelt field", deployment(`{name: c, image: i, securityContext: {readOnlyRootFileSystem: true}}`),
			[]string{".spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem: unknown field (in io.k8s.api.core.v1.SecurityContext)"}},
		{"a string for an integer", deployment(`{name: c, image: i, ports: [{containerPort: "8080"}]}`),
			[]string{".spec.template.spec.containers[0].ports[0].containerPort: want an integer, got string (8080)"}},
		{"a required field missing", deployment(`{image: i}`),
			[]string{`.spec.template.spec.containers[0]: required field "name" missing`}},
		{"a gRPC probe of the wrong shape", deployment(`{name: c, image: i, livenessProbe: {grpc: {port: grpc}}}`),
			[]string{".spec.template.spec.containers[0].livenessProbe.grpc: grpc probe: want {port: int, service?: string}, got map[port:grpc]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var m map[string]any
			if err := yaml.Unmarshal([]byte(tt.doc), &m); err != nil {
				t.Fatal(err)
			}
			got, err := checkSchema(m)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

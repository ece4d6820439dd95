package schemas

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// TestMetaSchemasCheckEveryDraft holds what the schema checks rely on from jsonschema: a schema is
// checked against its draft's meta-schema, for every draft, also when the first uses race (run
// with -race).
func TestMetaSchemasCheckEveryDraft(t *testing.T) {
	t.Parallel()
	drafts := []struct {
		name  string
		url   string
		draft *jsonschema.Draft
	}{
		{"draft-04", "http://json-schema.org/draft-04/schema#", jsonschema.Draft4},
		{"draft-06", "http://json-schema.org/draft-06/schema#", jsonschema.Draft6},
		{"draft-07", "http://json-schema.org/draft-07/schema#", jsonschema.Draft7},
		{"2019-09", "https://json-schema.org/draft/2019-09/schema", jsonschema.Draft2019},
		{"2020-12", "https://json-schema.org/draft/2020-12/schema", jsonschema.Draft2020},
	}
	for _, d := range drafts {
		for _, how := range []string{"$schema", "Compiler.Draft"} {
			t.Run(d.name+"/"+how, func(t *testing.T) {
				t.Parallel()
				compile := func(body string) error {
					c := jsonschema.NewCompiler()
					doc := "{" + body + "}"
					if how == "$schema" {
						doc = `{"$schema": "` + d.url + `", ` + body + "}"
					} else {
						c.Draft = d.draft
					}
					if err := c.AddResource("https://example.com/s.json", strings.NewReader(doc)); err != nil {
						return err
					}
					_, err := c.Compile("https://example.com/s.json")
					return err
				}
				if err := compile(`"type": "object", "properties": {"a": {"minLength": 1}}`); err != nil {
					t.Errorf("a valid schema does not compile: %v", err)
				}
				// invalid under every draft's meta-schema: "type" names a type, "minLength" is a
				// non-negative integer
				for _, body := range []string{`"type": 5`, `"properties": {"a": {"minLength": -1}}`} {
					err := compile(body)
					if err == nil {
						t.Errorf("%s: compiled; want the meta-schema to reject it", body)
						continue
					}
					if want := "does not validate with " + strings.TrimSuffix(d.url, "#"); !strings.Contains(err.Error(), want) {
						t.Errorf("%s: %v; want %q", body, err, want)
					}
				}
			})
		}
	}
}

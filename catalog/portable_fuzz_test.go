package catalog

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	yaml2 "go.yaml.in/yaml/v2"
)

// FuzzPortable holds Portable to its promise: a document it passes (and Decode reads without a
// finding) reads as the same value in YAML 1.1 (yaml.v2, as kustomize and Kubernetes tools read
// it) as it does to the service.
func FuzzPortable(f *testing.F) {
	addCorpusSeeds(f)
	f.Add([]byte("a: on\nb: [yes, n, 0777, 1_000, 0x1F, .5, ~, 2001-12-14]\n"))
	f.Add([]byte("a: {<<: {b: 1}, b: 2}\n"))
	f.Add([]byte("? [a]\n: b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, findings := Decode("fuzz.yaml", data)
		if len(findings) > 0 {
			return
		}
		for _, d := range docs {
			if len(d.Portable()) > 0 || json.Valid(d.Raw) {
				continue // refused; or JSON, which its readers read as JSON
			}
			var v1 map[any]any
			if err := yaml2.Unmarshal(d.Raw, &v1); err != nil {
				t.Fatalf("document %d passes, but YAML 1.1 cannot read it: %v", d.Index, err)
			}
			got, err := jsonOf(v1)
			if err != nil {
				t.Fatalf("document %d passes, but YAML 1.1 reads it as no JSON value: %v", d.Index, err)
			}
			want, err := json.Marshal(d.Value)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Fatalf("document %d passes, but YAML 1.1 reads it differently (-service +YAML 1.1):\n%s", d.Index, diff)
			}
		}
	})
}

// jsonOf is a yaml.v2 value in JSON, keys made strings the way sigs.k8s.io/yaml makes them.
func jsonOf(v any) (string, error) {
	var conv func(any) (any, error)
	conv = func(v any) (any, error) {
		switch x := v.(type) {
		case map[any]any:
			m := make(map[string]any, len(x))
			for k, e := range x {
				c, err := conv(e)
				if err != nil {
					return nil, err
				}
				m[fmt.Sprint(k)] = c
			}
			return m, nil
		case []any:
			s := make([]any, len(x))
			for i, e := range x {
				c, err := conv(e)
				if err != nil {
					return nil, err
				}
				s[i] = c
			}
			return s, nil
		}
		return v, nil
	}
	c, err := conv(v)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(c)
	return string(b), err
}

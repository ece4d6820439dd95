package yaml11

import (
	"testing"

	yaml2 "go.yaml.in/yaml/v2"
	yaml3 "go.yaml.in/yaml/v3"
)

// OnlyBool is what the two parsers say, on every spelling in upper and lower case of the words
// YAML 1.1 gives a type.
func TestOnlyBool(t *testing.T) {
	t.Parallel()
	for _, w := range []string{"y", "yes", "n", "no", "on", "off", "true", "false", "null", "nan", "inf"} {
		for mask := 0; mask < 1<<len(w); mask++ {
			b := []byte(w)
			for i := range b {
				if mask&(1<<i) != 0 {
					b[i] -= 'a' - 'A'
				}
			}
			v := string(b)
			var v1, v2 any
			if err := yaml2.Unmarshal(b, &v1); err != nil {
				t.Fatal(err)
			}
			if err := yaml3.Unmarshal(b, &v2); err != nil {
				t.Fatal(err)
			}
			_, bool1 := v1.(bool)
			_, str2 := v2.(string)
			if want := bool1 && str2; OnlyBool(v) != want {
				t.Errorf("OnlyBool(%q) = %v, want %v (YAML 1.1: %T, YAML 1.2: %T)", v, !want, want, v1, v2)
			}
		}
	}
}

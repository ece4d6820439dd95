package catalog

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Words that start with a letter are decided without a YAML 1.1 parser: the decision is the
// parser's for every such word of one to three characters (letters, digits and the punctuation of
// YAML 1.1's scalars), and for every spelling in upper and lower case of its words.
func TestYAML11DiffersWithoutParser(t *testing.T) {
	t.Parallel()
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	const rest = letters + "0123456789._:-+~<=/ "
	var words []string
	for _, a := range letters {
		words = append(words, string(a))
		for _, b := range rest {
			words = append(words, string(a)+string(b))
			for _, c := range rest {
				words = append(words, string(a)+string(b)+string(c))
			}
		}
	}
	for _, w := range []string{"yes", "no", "on", "off", "true", "false", "null", "y", "n", "nan", "inf", "none"} {
		for mask := 0; mask < 1<<len(w); mask++ {
			b := []byte(w)
			for i := range b {
				if mask&(1<<i) != 0 {
					b[i] = strings.ToUpper(string(b[i]))[0]
				}
			}
			words = append(words, string(b))
		}
	}
	checked := 0
	for _, w := range words {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte("v: "+w+"\n"), &doc); err != nil || doc.Content[0].Content[1].Kind != yaml.ScalarNode || doc.Content[0].Content[1].Style != 0 {
			continue // not a plain scalar on its own
		}
		n := doc.Content[0].Content[1]
		gotV, got := yaml11Differs(n)
		wantV, want := yaml11DiffersParsed(n)
		if got != want || gotV != wantV {
			t.Errorf("%q: differs %v (%s), the YAML 1.1 parser says %v (%s)", w, got, gotV, want, wantV)
		}
		checked++
	}
	t.Logf("%d words checked", checked)
}

package catalogtest

import (
	"crypto/sha256"
	"fmt"
	"strings"
)

// Options shape a generated catalog.
type Options struct {
	Name      string // metadata.name; default "generated"
	Functions int
	Publisher string // default "example.com"
	// Group is the API group of every function; default "fn.example.com".
	Group string
}

// Catalog returns a valid KRMFunctionCatalog in YAML with the given number of functions, cycling
// through container, exec and starlark runtimes, each version complete with a functionConfig schema.
func Catalog(o Options) []byte {
	if o.Name == "" {
		o.Name = "generated"
	}
	if o.Publisher == "" {
		o.Publisher = "example.com"
	}
	if o.Group == "" {
		o.Group = "fn.example.com"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: %s
  labels:
    team: platform
spec:
  krmFunctions:
`, o.Name)
	for i := range o.Functions {
		writeFunction(&b, o, i)
	}
	return []byte(b.String())
}

var nouns = []string{"Namespace", "Labels", "Annotations", "Image", "Replicas", "Resources", "Probes", "Secrets", "Policy", "Network"}
var verbs = []string{"Set", "Ensure", "Validate", "Generate", "Remove", "Apply", "Inject", "Check"}
var tagWords = []string{"mutator", "validator", "generator", "security", "networking", "labels", "namespace", "images"}

// Kind returns the kind of the i-th generated function.
func Kind(i int) string {
	return fmt.Sprintf("%s%s%d", verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)], i)
}

func digest(s string) string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(s)))
}

func writeFunction(b *strings.Builder, o Options, i int) {
	kind := Kind(i)
	lower := strings.ToLower(kind)
	fmt.Fprintf(b, `  - group: %s
    names:
      kind: %s
    description: %s the %s of every matching resource (entry %d).
    publisher: %s
    home: https://krm-functions.example.com/%s
    maintainers:
      - team-%d@example.com
    tags: [%s, %s]
    versions:
      - name: v1
        idempotent: true
        license: Apache-2.0
        usage: https://krm-functions.example.com/%s/README.md
        examples:
          - https://krm-functions.example.com/%s/examples/basic.md
        schema:
          openAPIV3Schema:
            type: object
            required: [spec]
            properties:
              spec:
                type: object
                description: What to change.
                required: [value]
                properties:
                  value:
                    type: string
                    description: The value to set.
                  selector:
                    type: object
                    properties:
                      kinds:
                        type: array
                        items: {type: string}
                      labels:
                        type: object
                        additionalProperties: {type: string}
                  mode:
                    type: string
                    enum: [merge, replace]
                    default: merge
`, o.Group, kind, verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)], i, o.Publisher, lower, i%7,
		tagWords[i%len(tagWords)], tagWords[(i+3)%len(tagWords)], lower, lower)
	switch i % 3 {
	case 0:
		fmt.Fprintf(b, `        runtime:
          container:
            image: registry.example.com/krm-functions/%s:v1.%d.0
            sha256: %s
`, lower, i%10, digest(kind))
	case 1:
		b.WriteString("        runtime:\n          exec:\n            platforms:\n")
		for _, p := range []string{"linux/amd64", "linux/arm64", "darwin/arm64"} {
			os, arch, _ := strings.Cut(p, "/")
			fmt.Fprintf(b, `              - bin: %s
                os: %s
                arch: %s
                uri: https://downloads.example.com/%s/v1.0.0/%s-%s-%s.tar.gz
                sha256: %s
`, lower, os, arch, lower, lower, os, arch, digest(kind+p))
		}
	default:
		fmt.Fprintf(b, `        runtime:
          starlark:
            uri: https://downloads.example.com/%s/v1.0.0/%s.star
            sha256: %s
`, lower, lower, digest(kind+".star"))
	}
}

// Dense returns a valid catalog of one function whose functionConfig schema's default is a list
// of n lists of one 0: four bytes and two values an element, the shape that costs most to read
// per byte. Its name is dense-functions, its publisher example.com.
func Dense(n int) []byte {
	var b strings.Builder
	b.Grow(4*n + 1024)
	b.WriteString(`apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: dense-functions
spec:
  krmFunctions:
    - group: dense.example.com
      names: {kind: Dense}
      description: A function whose schema has a dense default.
      publisher: example.com
      versions:
        - name: v1
          schema:
            openAPIV3Schema:
              type: object
              default: [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("[0]")
	}
	fmt.Fprintf(&b, "]\n          runtime: {container: {image: \"registry.example.com/dense@sha256:%s\"}}\n", digest("dense"))
	return []byte(b.String())
}

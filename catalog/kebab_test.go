package catalog

import (
	"strings"
	"testing"
)

func TestKebabName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"JavaApplication":         "java-application",
		"PrefixSuffixTransformer": "prefix-suffix-transformer",
		"HTTPRoute":               "http-route",
		"ApplyHTTPRoutes":         "apply-http-routes",
		"SetIAMPolicy2":           "set-iam-policy2",
		"SetNamespace0":           "set-namespace0",
		"S3Bucket":                "s3-bucket",
		"URL":                     "url",
		"A":                       "a",
		"":                        "",
	} {
		if got := KebabName(in); got != want {
			t.Errorf("KebabName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Validation defaults a transformer's name with KebabName: an unnamed HTTPRoute and one named
// http-route are the same transformer twice.
func TestCompositionDefaultNameIsKebabName(t *testing.T) {
	t.Parallel()
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	doc := `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
transformers:
- apiVersion: gateway.example.com/v1
  kind: HTTPRoute
  host: a.example.com
- apiVersion: gateway.example.com/v1
  kind: HTTPRoute
  metadata:
    name: http-route
  host: b.example.com
`
	_, findings := v.Validate("composition.yaml", []byte(doc), Options{})
	for _, f := range findings {
		if f.Severity == SeverityError && strings.Contains(f.String(), `named "http-route" appears twice`) {
			return
		}
	}
	t.Errorf("want the duplicate http-route reported, got %v", findings)
}

package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"go.yaml.in/yaml/v3"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// TestOpenAPIDescribesEveryRoute keeps server/openapi.yaml and the router in step: every route
// under /api/v1, with its method, is described.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Store: struct{ Store }{}, Validator: v})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	routes := 0
	err = chi.Walk(s.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, "/api/v1/") || strings.HasSuffix(route, "/*") || method == http.MethodHead {
			return nil
		}
		routes++
		if _, ok := doc.Paths[route][strings.ToLower(method)]; !ok {
			t.Errorf("openapi.yaml does not describe %s %s", method, route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if routes < 15 {
		t.Errorf("walked %d API routes; the walk missed the router", routes)
	}
}

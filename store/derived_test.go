package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/store"
)

// TestDerivedDefinitionBounded: a publish that would make a function's generated definition.yaml
// larger than store.MaxDerivedBytes is refused, and nothing of it is published. A dense default
// of a megabyte writes out as nine: lines of dashes, each indented. Before, the 34 MB it grew to
// was generated on every GET, too large for the response cache.
func TestDerivedDefinitionBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	dense := catalogtest.Dense(300_000) // 1.2 MB; 9 MB generated
	_, _, err := publish(t, s, "example.com", "dense-functions", "1.0.0", dense)
	if !errors.Is(err, store.ErrTooLarge) || !strings.Contains(err.Error(), "dense.example.com/Dense") || !strings.Contains(err.Error(), "4.0 MiB") {
		t.Fatalf("publish of the dense catalog: %v; want ErrTooLarge naming the function and the limit", err)
	}
	if _, err := s.CatalogContent(ctx, "dense-functions", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused catalog: %v, want nothing published", err)
	}
	small := catalogtest.Dense(1000)
	if _, _, err := publish(t, s, "example.com", "dense-functions", "1.0.0", small); err != nil {
		t.Fatal(err)
	}
	c, err := s.DefinitionContent(ctx, "dense.example.com", "Dense")
	if err != nil || !c.Derived || len(c.Bytes) > store.MaxDerivedBytes {
		t.Fatalf("the generated definition: %d bytes, derived %v, %v", len(c.Bytes), c.Derived, err)
	}
}

// TestDigestsFollowTheSources: the digests a cache keys definitions and functions by change when
// what they stand for does, and only then.
func TestDigestsFollowTheSources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	if _, _, err := s.DefinitionDigest(ctx, "dense.example.com", "Dense"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown function: %v", err)
	}
	if _, _, err := publish(t, s, "example.com", "dense-functions", "1.0.0", catalogtest.Dense(10)); err != nil {
		t.Fatal(err)
	}
	d1, derived, err := s.DefinitionDigest(ctx, "dense.example.com", "Dense")
	f1, ferr := s.FunctionDigest(ctx, "dense.example.com", "Dense")
	if err != nil || !derived || ferr != nil {
		t.Fatalf("DefinitionDigest = %q %v %v; FunctionDigest %v", d1, derived, err, ferr)
	}
	again, _, _ := s.DefinitionDigest(ctx, "dense.example.com", "Dense")
	fagain, _ := s.FunctionDigest(ctx, "dense.example.com", "Dense")
	if again != d1 || fagain != f1 {
		t.Fatal("the digests changed with nothing published")
	}
	if _, _, err := publish(t, s, "example.com", "dense-functions", "1.1.0", catalogtest.Dense(11)); err != nil {
		t.Fatal(err)
	}
	d2, _, _ := s.DefinitionDigest(ctx, "dense.example.com", "Dense")
	f2, _ := s.FunctionDigest(ctx, "dense.example.com", "Dense")
	if d2 == d1 || f2 == f1 {
		t.Fatal("the digests did not change when a catalog that lists the function published")
	}
}

// TestDerivedBoundMeasuredExactly: versions measured by their bound at publish are measured
// exactly when their bounds alone would take the generated definition past the limit, so that a
// function of many versions is not refused for what it is not.
func TestDerivedBoundMeasuredExactly(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	mustToken(t, s, "example.com")
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata:\n  name: many-versions\nspec:\n  krmFunctions:\n")
	b.WriteString("    - group: many.example.com\n      names: {kind: Many}\n      description: A function of many versions.\n      publisher: example.com\n      versions:\n")
	text := strings.Repeat("words of a long description ", 360) // 10 KB a version, a bound of 60 KB
	for i := range 100 {
		fmt.Fprintf(&b, "        - name: v%d\n          schema: {openAPIV3Schema: {type: object, description: %q}}\n", i+1, text)
		fmt.Fprintf(&b, "          runtime: {container: {image: \"registry.example.com/many@sha256:%s\"}}\n", strings.Repeat("e", 64))
	}
	if _, _, err := publish(t, s, "example.com", "many-versions", "1.0.0", []byte(b.String())); err != nil {
		t.Fatalf("a function whose generated definition is about 1 MB, its bounds 6: %v", err)
	}
	c, err := s.DefinitionContent(context.Background(), "many.example.com", "Many")
	if err != nil || len(c.Bytes) > store.MaxDerivedBytes || len(c.Bytes) < 900_000 {
		t.Fatalf("the generated definition: %d bytes, %v", len(c.Bytes), err)
	}
}

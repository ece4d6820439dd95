package catalog_test

import (
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
)

// BenchmarkValidate500 validates a generated 500-function catalog and, in the same run, decodes the
// same bytes with plain yaml.v3 into an interface{}. It reports the ratio of the two as
// "x-yaml-decode" (target: at most 3).
//
//	go test ./catalog -run '^$' -bench Validate500 -benchtime 20x
func BenchmarkValidate500(b *testing.B) {
	data := catalogtest.Catalog(catalogtest.Options{Functions: 500})
	v, err := catalog.NewValidator()
	if err != nil {
		b.Fatal(err)
	}
	if _, fs := v.Validate("bench.yaml", data, catalog.Options{}); fs.HasErrors() {
		b.Fatalf("the generated catalog is invalid: %v", fs[0])
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var validate, baseline time.Duration
	for b.Loop() {
		start := time.Now()
		var v0 any
		if err := yaml.Unmarshal(data, &v0); err != nil {
			b.Fatal(err)
		}
		baseline += time.Since(start)

		start = time.Now()
		if _, fs := v.Validate("bench.yaml", data, catalog.Options{}); fs.HasErrors() {
			b.Fatal("unexpected errors")
		}
		validate += time.Since(start)
	}
	b.ReportMetric(float64(validate)/float64(baseline), "x-yaml-decode")
	b.ReportMetric(float64(validate.Microseconds())/float64(b.N)/1000, "ms-validate/op")
	b.ReportMetric(float64(baseline.Microseconds())/float64(b.N)/1000, "ms-yaml/op")
}

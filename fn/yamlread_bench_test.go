package fn

import (
	"bytes"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

// BenchmarkReadYAML reads 1,000 Deployments (with line comments, and with a licence header and a
// head comment above every resource, as package files have them) with the fast reader and with
// yaml.v3, turn by turn in the same run, and reports how many times faster the fast reader is
// (x-faster; x-faster-commented for the commented list).
//
//	go test ./fn -run '^$' -bench ReadYAML -benchtime 20x
func BenchmarkReadYAML(b *testing.B) {
	plain := fntest.Deployments(1000, "bench")
	commented := append([]byte("# Copyright 2026 The Authors.\n# SPDX-License-Identifier: Apache-2.0\n\n"),
		bytes.ReplaceAll(plain, []byte("\n- apiVersion: apps/v1\n"), []byte("\n# the application\n- apiVersion: apps/v1\n"))...)
	for _, in := range [][]byte{plain, commented} {
		if _, ok := readYAMLFast(in); !ok {
			b.Fatal("the fast reader did not take the benchmark's input")
		}
	}
	type contender struct {
		name string
		read func([]byte)
		in   []byte
		took time.Duration
	}
	fast := func(in []byte) { readYAMLFast(in) }
	v3 := func(in []byte) {
		if _, err := decodeYAMLv3(in); err != nil {
			b.Fatal(err)
		}
	}
	all := []*contender{{"fast", fast, plain, 0}, {"yaml.v3", v3, plain, 0}, {"fast-commented", fast, commented, 0}, {"yaml.v3-commented", v3, commented, 0}}
	n := 0
	for b.Loop() {
		n++
		for _, c := range all {
			start := time.Now()
			c.read(c.in)
			c.took += time.Since(start)
		}
	}
	for _, c := range all {
		b.ReportMetric(float64(c.took.Microseconds())/1000/float64(n), "ms-"+c.name+"/read")
	}
	b.ReportMetric(float64(all[1].took)/float64(all[0].took), "x-faster")
	b.ReportMetric(float64(all[3].took)/float64(all[2].took), "x-faster-commented")
}

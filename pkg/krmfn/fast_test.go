package krmfn

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/pkg/krmfn/yamlfast"
)

// deployments is a ResourceList of n Deployments as Kubernetes tooling writes them, with the
// comments people put on them, and a functionConfig.
func deployments(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	for i := range n {
		fmt.Fprintf(&b, `- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: app-%d
    labels:
      app: app-%d # the selector's
    annotations:
      config.kubernetes.io/index: "0"
      internal.config.kubernetes.io/path: deploy/app-%d.yaml
  spec:
    replicas: 3
    selector:
      matchLabels:
        app: app-%d
    template:
      metadata:
        labels:
          app: app-%d
      spec:
        containers:
        # the server
        - name: app
          image: nginx:1.25
          args: ["--port=8080", -v]
          ports:
          - containerPort: 8080
            protocol: TCP
          resources:
            limits:
              cpu: 500m
              memory: 256Mi
`, i, i, i, i, i)
	}
	b.WriteString("functionConfig:\n  apiVersion: fn.example.com/v1\n  kind: SetNamespace\n  namespace: prod\n")
	return []byte(b.String())
}

// A list read and written with the fast reader and writer is the list yaml.v3 reads, written to the
// same bytes; and the fast paths take the lists functions are given.
func TestFastPathsTakeResourceLists(t *testing.T) {
	t.Parallel()
	for _, in := range [][]byte{[]byte(input), deployments(3)} {
		var slab yamlfast.Slab
		if _, _, ok := yamlfast.Read(in, yamlfast.Options{Budget: -1}, &slab); !ok {
			t.Errorf("the fast reader declines:\n%s", in)
		}
		checkFastPaths(t, in)
		rl, _, err := DecodeResourceList(in)
		if err != nil {
			t.Fatal(err)
		}
		n, err := rl.node()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := yamlfast.Append(nil, n, false); !ok {
			t.Errorf("the fast writer declines:\n%s", in)
		}
	}
}

// checkFastPaths holds DecodeResourceList and Encode with their fast paths to yaml.v3 alone: the
// same documents node for node, and the same bytes written in either format.
func checkFastPaths(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := readYAML(data, false)
	got, gotErr := readYAML(data, true)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("yaml.v3: %v, with the fast reader: %v\n%s", wantErr, gotErr, data)
	}
	if len(got) != len(want) {
		t.Fatalf("%d documents, yaml.v3 reads %d:\n%s", len(got), len(want), data)
	}
	for i := range want {
		if d := yamlfast.Diff(fmt.Sprintf("doc %d", i), want[i], got[i]); d != "" {
			t.Fatalf("differs from yaml.v3 at %s\ninput:\n%s", d, data)
		}
	}
	rl, _, err := DecodeResourceList(data)
	if err != nil {
		return
	}
	n, err := rl.node()
	if err != nil {
		return
	}
	slow, slowErr := encodeYAMLDocument(n, false)
	fast, fastErr := encodeYAMLDocument(n, true)
	if slowErr != nil {
		return // yaml.v3 cannot write it: the fast writer may or may not
	}
	if fastErr != nil {
		t.Fatalf("written with the fast writer: %v; by yaml.v3 alone: ok", fastErr)
	}
	if diff := cmp.Diff(string(slow), string(fast)); diff != "" {
		t.Fatalf("written (-yaml.v3 +fast writer):\n%s\ninput:\n%s", diff, data)
	}
}

// FuzzFastPaths holds DecodeResourceList's fast reader and Encode's fast writer to yaml.v3 on any
// input, YAML or JSON.
//
//	go test ./pkg/krmfn -run '^$' -fuzz FuzzFastPaths -fuzztime 60s
func FuzzFastPaths(f *testing.F) {
	f.Add([]byte(input))
	f.Add(deployments(2))
	f.Add([]byte("# licence\n\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: K # k\n  data:\n    s: |\n      x\n    q: 'a b'\n    e: \"\"\n  l: [1, x, {a: b}]\n  # foot\nresults:\n- message: m\n  severity: info\n"))
	f.Add([]byte(`{"kind":"ResourceList","items":[{"apiVersion":"v1","kind":"K","a":[1,2.5,null,true,"1","x: y"]}]}`))
	f.Add([]byte("kind: ResourceList\nitems:\n- &a {apiVersion: v1, kind: K}\n- *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastPaths(t, data)
	})
}

// BenchmarkFastPaths decodes, and encodes as YAML, a list of 100 Deployments with the fast reader
// and writer and with yaml.v3 alone, in the same run; x-faster is the ratio.
//
//	go test ./pkg/krmfn -run '^$' -bench FastPaths
func BenchmarkFastPaths(b *testing.B) {
	data := deployments(100)
	var took [2]float64
	for b.Loop() {
		for i, fast := range []bool{false, true} {
			start := time.Now()
			docs, err := readYAML(data, fast)
			if err != nil {
				b.Fatal(err)
			}
			rl, err := fromNode(docs[0].Content[0])
			if err != nil {
				b.Fatal(err)
			}
			n, err := rl.node()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := encodeYAMLDocument(n, fast); err != nil {
				b.Fatal(err)
			}
			took[i] += float64(time.Since(start))
		}
	}
	b.ReportMetric(took[0]/float64(b.N)/1e6, "ms-yaml.v3")
	b.ReportMetric(took[1]/float64(b.N)/1e6, "ms-fast")
	b.ReportMetric(took[0]/took[1], "x-faster")
}

// FuzzJSONScalar holds the JSON writer's shortcuts to what they stand for: a boolean or decimal
// integer written as it is to its decoding (scalarDecoded), a plain string to encoding/json's.
//
//	go test ./pkg/krmfn -run '^$' -fuzz FuzzJSONScalar -fuzztime 60s
func FuzzJSONScalar(f *testing.F) {
	for _, v := range []string{"true", "false", "True", "0", "-0", "007", "-12", "123456789012345678", "1234567890123456789", "0x1F", "1_000", "+1", "a \"q\" \\ b", "<&>", "tab\there", "é", "\u2028"} {
		f.Add(v, "", false)
		f.Add(v, "!!int", false)
		f.Add(v, "!!bool", true)
	}
	f.Fuzz(func(t *testing.T, value, tag string, quoted bool) {
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
		if quoted {
			n.Style = yaml.DoubleQuotedStyle
		}
		var fast, slow jsonWriter
		fastErr, slowErr := fast.scalar(n), slow.scalarDecoded(n, n.ShortTag())
		if (fastErr != nil) != (slowErr != nil) || string(fast.b) != string(slow.b) {
			t.Fatalf("%q (tag %q): %s (%v), decoded: %s (%v)", value, tag, fast.b, fastErr, slow.b, slowErr)
		}
		fast.b, slow.b = nil, nil
		fast.str(value)
		slow.strEncoded(value)
		if string(fast.b) != string(slow.b) {
			t.Fatalf("string %q: %s, encoding/json: %s", value, fast.b, slow.b)
		}
	})
}

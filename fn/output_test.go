package fn

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// sentList is a list as the pipeline sends it, and its encoding in f.
func sentList(t testing.TB, f Format) (*ResourceList, []byte) {
	t.Helper()
	list, _, err := DecodeResourceList([]byte(sampleList))
	if err != nil {
		t.Fatal(err)
	}
	list.Results = nil
	sent, err := list.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	return list, sent
}

func TestDecodeOutputReusesUnchangedItems(t *testing.T) {
	t.Parallel()
	list, sent := sentList(t, YAML)
	items := sent[bytes.Index(sent, []byte("items:\n")):bytes.Index(sent, []byte("functionConfig:"))]
	results := "results:\n- message: checked\n  severity: info\n"
	indented := "  " + strings.ReplaceAll(strings.TrimSuffix(string(items[len("items:\n"):]), "\n"), "\n", "\n  ") + "\n"
	for _, tc := range []struct {
		name  string
		out   string
		reuse bool
	}{
		{"the same items, results after", string(sent) + results, true},
		{"the same items, functionConfig first", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n  kind: X\n" + string(items) + results, true},
		{"the same items last", "kind: ResourceList\n" + results + string(items), true},
		{"one value changed", strings.Replace(string(sent), "LoadBalancer", "ClusterIP", 1), false},
		{"a comment at column 0 after the items", strings.Replace(string(sent), "functionConfig:", "# note\nfunctionConfig:", 1), false},
		{"items indented", strings.Replace(string(sent), string(items), "items:\n"+indented, 1), false},
		{"no items", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeOutput([]byte(tc.out), sent, list)
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := DecodeResourceList([]byte(tc.out))
			if err != nil {
				t.Fatal(err)
			}
			reused := len(got.Items) > 0 && got.Items[0] == list.Items[0]
			if reused != tc.reuse {
				t.Errorf("items reused: %v, want %v", reused, tc.reuse)
			}
			checkSameList(t, list, want, got, false)
		})
	}
	if got, err := DecodeOutput(sent, sent, nil); err != nil || len(got.Items) != 1 || got.Items[0] == list.Items[0] {
		t.Errorf("without the sent list: %v, items %v", err, got)
	}
}

func TestDecodeOutputReusesUnchangedJSONItems(t *testing.T) {
	t.Parallel()
	list, sent := sentList(t, JSON)
	body := strings.TrimSuffix(string(sent), "}\n")
	for _, tc := range []struct {
		name  string
		out   string
		reuse bool
	}{
		{"the same items, results after", body + `,"results":[{"message":"checked","severity":"info"}]}`, true},
		{"spaced and indented", strings.Replace(string(sent), `"items":[`, "\n  \"items\" : [", 1), true},
		{"items last", `{"kind":"ResourceList","functionConfig":{"kind":"X"},` + string(sent[strings.Index(string(sent), `"items":`):]), true},
		{"one value changed", strings.Replace(string(sent), "LoadBalancer", "ClusterIP", 1), false},
		{"items as a value elsewhere", `{"kind":"ResourceList","x":"items","items":[]}`, false},
		{"escaped key", strings.Replace(string(sent), `"items"`, `"\u0069tems"`, 1), false},
		{"two items keys", body + `,"items":[]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want, _, wantErr := DecodeResourceList([]byte(tc.out))
			got, err := DecodeOutput([]byte(tc.out), sent, list)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("error %v, reading it: %v", err, wantErr)
			}
			if err != nil {
				return
			}
			reused := len(got.Items) > 0 && got.Items[0] == list.Items[0]
			if reused != tc.reuse {
				t.Errorf("items reused: %v, want %v", reused, tc.reuse)
			}
			checkSameList(t, list, want, got, true)
		})
	}
}

// checkSameList fails unless got encodes as want does, results included, once want's items are
// restored from list's as the pipeline restores a function's output (with the layout, for JSON).
func checkSameList(t *testing.T, list, want, got *ResourceList, sentJSON bool) {
	t.Helper()
	for _, l := range []*ResourceList{want, got} {
		if list == nil || len(l.Items) != len(list.Items) {
			continue
		}
		for i, it := range l.Items {
			r := Restore(list.Items[i], it) // nothing to do for an item handed back as sent
			if sentJSON {
				restoreLayout(list.Items[i].YNode(), r.YNode(), 0)
			}
			l.Items[i] = r
		}
	}
	w, err := want.Encode(YAML)
	if err != nil {
		t.Fatal(err)
	}
	g, err := got.Encode(YAML)
	if err != nil {
		t.Fatal(err)
	}
	if string(w) == string(g) {
		return
	}
	// Where yaml.v3's writing and reading move comments (a round trip that is not one), the items
	// handed back keep them where they were sent, and nothing else may differ.
	reused := len(got.Items) > 0 && list != nil && got.Items[0] == list.Items[0]
	if !reused || uncommented(t, want) != uncommented(t, got) {
		t.Errorf("output read back differs from reading it:\n--- read\n%s\n--- reused\n%s", w, g)
	}
}

// uncommented is l's YAML without its comments.
func uncommented(t *testing.T, l *ResourceList) string {
	t.Helper()
	c := &ResourceList{FunctionConfig: l.FunctionConfig, Results: l.Results}
	for _, it := range l.Items {
		n := yaml.CopyYNode(it.Document())
		dropComments(n)
		c.Items = append(c.Items, yaml.NewRNode(n))
	}
	b, err := c.Encode(YAML)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func dropComments(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		dropComments(c)
	}
}

// Every test data document sent as an item and echoed unchanged comes back as what reading the echo
// gives, written out.
func TestDecodeOutputOnTestdata(t *testing.T) {
	t.Parallel()
	reused := 0
	for path, docs := range testdataDocuments(t) {
		for _, d := range docs {
			if d.Kind != yaml.DocumentNode || len(d.Content) != 1 || d.Content[0].Kind != yaml.MappingNode {
				continue
			}
			for _, f := range []Format{YAML, JSON} {
				if checkEcho(t, d.Content[0], f) {
					reused++
				}
			}
			if t.Failed() {
				t.Fatalf("in %s", path)
			}
		}
	}
	t.Logf("%d test data documents echoed (as YAML and as JSON) came back unread", reused)
	if reused == 0 {
		t.Error("no echo came back unread")
	}
}

// FuzzDecodeOutput: whatever a function writes, DecodeOutput reads it as DecodeResourceList does,
// or hands back the sent items only where reading them gives the same list.
//
//	go test ./fn -run '^$' -fuzz FuzzDecodeOutput -fuzztime 60s
func FuzzDecodeOutput(f *testing.F) {
	_, sent := sentList(f, YAML)
	f.Add(string(sent), false)
	f.Add(string(sent)+"results:\n- message: x\n", false)
	f.Add(strings.Replace(string(sent), "functionConfig:", "# c\nfunctionConfig:", 1), false)
	_, sent = sentList(f, JSON)
	f.Add(string(sent), true)
	f.Add(strings.Replace(string(sent), `"items":[`, `"results":[{"message":"x"}],"items":[`, 1), true)
	f.Fuzz(func(t *testing.T, out string, asJSON bool) {
		format := YAML
		if asJSON {
			format = JSON
		}
		list, sent := sentList(t, format)
		got, err := DecodeOutput([]byte(out), sent, list)
		want, _, wantErr := DecodeResourceList([]byte(out))
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("error %v, reading it: %v", err, wantErr)
		}
		if err != nil {
			return
		}
		checkSameList(t, list, want, got, asJSON)
	})
}

// FuzzDecodeOutputEcho: any document sent as an item, as YAML or JSON, and echoed, comes back as
// reading the echo and restoring it gives.
//
//	go test ./fn -run '^$' -fuzz FuzzDecodeOutputEcho -fuzztime 60s
func FuzzDecodeOutputEcho(f *testing.F) {
	for _, doc := range setAnnotationCases {
		f.Add(doc, false)
		f.Add(doc, true)
	}
	f.Add(commented, true)
	f.Add("a: 0x1F\nb: True\nc: ~\nd: 2001-12-14\ne: !!str x\n<<: {f: g}\n", true)
	f.Fuzz(func(t *testing.T, doc string, asJSON bool) {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil || n.Kind != yaml.DocumentNode || len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
			return
		}
		format := YAML
		if asJSON {
			format = JSON
		}
		checkEcho(t, &n, format)
	})
}

// checkEcho sends item in a list in format f, gives DecodeOutput the same bytes back, and holds
// what it returns to reading and restoring them. It reports whether the item came back unread.
func checkEcho(t *testing.T, item *yaml.Node, f Format) bool {
	t.Helper()
	list := &ResourceList{Items: []*yaml.RNode{yaml.NewRNode(item)}}
	sent, err := list.Encode(f)
	if err != nil {
		return false
	}
	want, _, err := DecodeResourceList(sent)
	if err != nil {
		return false
	}
	got, err := DecodeOutput(sent, sent, list)
	if err != nil {
		t.Fatalf("%v, reading it gave no error", err)
	}
	checkSameList(t, list, want, got, f == JSON)
	return got.Items[0] == list.Items[0]
}

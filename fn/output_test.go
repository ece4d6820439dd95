package fn

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// sentList is sampleList as the pipeline sends it, and its encoding in f.
func sentList(t testing.TB, f Format) (*ResourceList, []byte) { return encodedList(t, sampleList, f) }

// threeItems is a list of three items as the pipeline sends it, and its encoding in f.
func threeItems(t testing.TB, f Format) (*ResourceList, []byte) {
	return encodedList(t, strings.Replace(sampleList, "functionConfig:", `- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: settings
  data:
    mode: middle-value
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: app # the app
  spec:
    replicas: 2
functionConfig:`, 1), f)
}

// encodedList is the list text, without results, as the pipeline sends it, and its encoding in f.
func encodedList(t testing.TB, text string, f Format) (*ResourceList, []byte) {
	t.Helper()
	list, _, err := DecodeResourceList([]byte(text))
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
		{"the same items, then a second items key, empty", string(sent) + "items: []\n", false},
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
// An item handed back as sent may differ from reading it in where its comments are (below).
func checkSameList(t *testing.T, list, want, got *ResourceList, sentJSON bool) {
	t.Helper()
	handedBack := make([]bool, len(got.Items))
	for i, it := range got.Items {
		handedBack[i] = list != nil && i < len(list.Items) && it == list.Items[i]
	}
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
	w, g := listYAML(t, want), listYAML(t, got)
	if w == g {
		return
	}
	// Where yaml.v3's writing and reading move comments (a round trip that is not one), the items
	// handed back keep them where they were sent, and nothing else may differ.
	same := len(want.Items) == len(got.Items) &&
		listYAML(t, &ResourceList{FunctionConfig: want.FunctionConfig, Results: want.Results}) ==
			listYAML(t, &ResourceList{FunctionConfig: got.FunctionConfig, Results: got.Results})
	for i := 0; same && i < len(got.Items); i++ {
		if itemYAML(t, want.Items[i], false) != itemYAML(t, got.Items[i], false) {
			same = handedBack[i] && itemYAML(t, want.Items[i], true) == itemYAML(t, got.Items[i], true)
		}
	}
	if !same {
		t.Errorf("output read back differs from reading it:\n--- read\n%s\n--- reused\n%s", w, g)
	}
}

func listYAML(t *testing.T, l *ResourceList) string {
	t.Helper()
	b, err := l.Encode(YAML)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// itemYAML is an item's YAML, without its comments if asked.
func itemYAML(t *testing.T, it *yaml.RNode, uncommented bool) string {
	t.Helper()
	n := it.Document()
	if uncommented {
		n = yaml.CopyYNode(n)
		dropComments(n)
	}
	b, err := EncodeYAML(n)
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

// Every three test data resources in a row, sent as a list and written back with the middle one
// changed (an annotation set), read as reading the whole output reads them: the others handed
// back, the middle one read alone where it can be, with the whole output's lines and columns.
func TestDecodeOutputChangedOnTestdata(t *testing.T) {
	t.Parallel()
	var resources []*yaml.Node
	byPath := testdataDocuments(t)
	for _, path := range slices.Sorted(maps.Keys(byPath)) { // the same lists on every run
		for _, d := range byPath[path] {
			if d.Kind == yaml.DocumentNode && len(d.Content) == 1 && d.Content[0].Kind == yaml.MappingNode {
				if _, err := checkItem(d, 0); err == nil {
					resources = append(resources, d)
				}
			}
		}
	}
	alone := map[Format]int{}
	for i := 0; i+3 <= len(resources); i++ {
		for _, f := range []Format{YAML, JSON} {
			list := &ResourceList{}
			for _, d := range resources[i : i+3] {
				list.Items = append(list.Items, yaml.NewRNode(yaml.CopyYNode(d.Content[0])))
			}
			sent, err := list.Encode(f)
			if err != nil {
				continue
			}
			changed := &ResourceList{Items: slices.Clone(list.Items)}
			changed.Items[1] = yaml.NewRNode(yaml.CopyYNode(list.Items[1].YNode()))
			if err := setAnnotation(changed.Items[1], "example.com/changed", "yes"); err != nil {
				continue
			}
			out, err := changed.Encode(f)
			if err != nil {
				t.Fatal(err)
			}
			want, _, wantErr := DecodeResourceList(out)
			got, err := DecodeOutput(out, sent, list)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("resources %d-%d as %s: error %v, reading the whole output: %v", i, i+2, f, err, wantErr)
			}
			if err != nil {
				continue
			}
			if len(got.Items) == 3 && got.Items[0] == list.Items[0] && got.Items[1] != list.Items[1] {
				alone[f]++
				if diff := cmp.Diff(positions(want.Items[1].YNode(), nil), positions(got.Items[1].YNode(), nil)); diff != "" {
					t.Errorf("resources %d-%d as %s: positions of the changed one (-whole +alone):\n%s", i, i+2, f, diff)
				}
			}
			checkSameList(t, list, want, got, f == JSON)
			if t.Failed() {
				t.Fatalf("resources %d-%d as %s:\n%s", i, i+2, f, out)
			}
		}
	}
	t.Logf("%d lists of three test data resources; the changed one read alone: %d as YAML, %d as JSON", len(resources)-2, alone[YAML], alone[JSON])
	if alone[YAML] == 0 || alone[JSON] == 0 {
		t.Error("no changed item was read alone")
	}
}

// FuzzDecodeOutput: whatever a function writes, DecodeOutput reads it as DecodeResourceList does,
// or hands back the sent items only where reading them gives the same list.
//
//	go test ./fn -run '^$' -fuzz FuzzDecodeOutput -fuzztime 60s
func FuzzDecodeOutput(f *testing.F) {
	_, sent := threeItems(f, YAML)
	f.Add(string(sent), false)
	f.Add(string(sent)+"results:\n- message: x\n", false)
	f.Add(strings.Replace(string(sent), "functionConfig:", "# c\nfunctionConfig:", 1), false)
	f.Add(strings.Replace(string(sent), "middle-value", "changed", 1), false)
	f.Add(strings.Replace(string(sent), "replicas: 2", "replicas: &r 2\n    other: *r", 1), false)
	_, sent = threeItems(f, JSON)
	f.Add(string(sent), true)
	f.Add(strings.Replace(string(sent), `"items":[`, `"results":[{"message":"x"}],"items":[`, 1), true)
	f.Add(strings.Replace(string(sent), "middle-value", "changed", 1), true)
	f.Fuzz(func(t *testing.T, out string, asJSON bool) {
		format := YAML
		if asJSON {
			format = JSON
		}
		list, sent := threeItems(t, format)
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

func TestDecodeOutputReadsOnlyChangedItems(t *testing.T) {
	t.Parallel()
	all := []bool{true, true, true}
	none := []bool{false, false, false}
	for _, tc := range []struct {
		name    string
		format  Format
		edit    func(string) string
		reused  []bool
		invalid bool
	}{
		{"yaml: the middle one changed", YAML, replace("middle-value", "changed"), []bool{true, false, true}, false},
		{"yaml: the first one changed", YAML, replace("LoadBalancer", "ClusterIP"), []bool{false, true, true}, false},
		{"yaml: the last one changed, results after", YAML, func(s string) string {
			return strings.Replace(s, "replicas: 2", "replicas: 3", 1) + "results:\n- message: scaled\n"
		}, []bool{true, true, false}, false},
		{"yaml: all changed", YAML, func(s string) string {
			return replace("middle-value", "x")(replace("LoadBalancer", "y")(replace("replicas: 2", "replicas: 4")(s)))
		}, none, false},
		{"yaml: none changed", YAML, func(s string) string { return s }, all, false},
		{"yaml: an item added", YAML, replace("functionConfig:", "- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: new\nfunctionConfig:"), none, false},
		{"yaml: an item removed", YAML, replace("- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: settings\n  data:\n    mode: middle-value\n", ""), none, false},
		{"yaml: an alias in the items", YAML, replace("mode: middle-value", "mode: &m middle\n    other: *m"), none, false},
		{"yaml: a tag in the changed item", YAML, replace("mode: middle-value", "mode: !!str 5"), none, false},
		{"yaml: a head comment in the changed item", YAML, replace("    mode: middle-value", "    # set by the function\n    mode: changed"), []bool{true, false, true}, false},
		{"yaml: a foot comment in the changed item", YAML, replace("    mode: middle-value", "    mode: changed\n    # set by the function"), none, false},
		{"yaml: the changed item a scalar", YAML, replace("- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: settings\n  data:\n    mode: middle-value\n", "- just a string\n"), none, true},
		{"yaml: a second items key, empty", YAML, func(s string) string { return replace("middle-value", "changed")(s) + "items: []\n" }, none, false},
		{"json: the middle one changed", JSON, replace("middle-value", "changed"), []bool{true, false, true}, false},
		{"json: all changed", JSON, func(s string) string {
			return replace("middle-value", "x")(replace("LoadBalancer", "y")(replace(`"replicas":2`, `"replicas":4`)(s)))
		}, none, false},
		{"json: the changed item a scalar", JSON, replace(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"mode":"middle-value"}}`, "1"), none, true},
		{"json: an item added", JSON, replace(`"items":[`, `"items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"new"}},`), none, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			list, sent := threeItems(t, tc.format)
			out := tc.edit(string(sent))
			if out == string(sent) && tc.reused[1] == false {
				t.Fatal("the edit changed nothing")
			}
			want, _, wantErr := DecodeResourceList([]byte(out))
			got, err := DecodeOutput([]byte(out), sent, list)
			if (err != nil) != tc.invalid || (wantErr != nil) != tc.invalid {
				t.Fatalf("error %v, reading the whole output: %v; want an error: %v", err, wantErr, tc.invalid)
			}
			if err != nil {
				return
			}
			var reused []bool
			for i, it := range got.Items {
				reused = append(reused, i < len(list.Items) && it == list.Items[i])
			}
			if len(got.Items) != len(list.Items) {
				reused = none
			}
			if diff := cmp.Diff(tc.reused, reused); diff != "" {
				t.Errorf("items handed back (-want +got):\n%s", diff)
			}
			for i := 0; len(got.Items) == len(list.Items) && len(want.Items) == len(list.Items) && i < len(reused); i++ { // an item read alone has the lines and columns of the whole output
				if diff := cmp.Diff(positions(want.Items[i].YNode(), nil), positions(got.Items[i].YNode(), nil)); !reused[i] && diff != "" {
					t.Errorf("item %d: positions (-whole +alone):\n%s", i, diff)
				}
			}
			checkSameList(t, list, want, got, tc.format == JSON)
		})
	}
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

// An item handed back may hold an alias of an anchor in an item that changed: reading the whole
// output then fails, and so must DecodeOutput.
func TestDecodeOutputAnchorAcrossItems(t *testing.T) {
	t.Parallel()
	list, _, err := DecodeResourceList([]byte("kind: ResourceList\nitems:\n- apiVersion: v1\n  kind: A\n  metadata:\n    name: &n shared\n- apiVersion: v1\n  kind: B\n  metadata:\n    name: *n\n"))
	if err != nil {
		t.Fatal(err)
	}
	sent, err := list.Encode(YAML)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Replace(string(sent), "&n shared", "renamed", 1)
	if out == string(sent) {
		t.Fatalf("no anchor in what was sent:\n%s", sent)
	}
	if _, _, err := DecodeResourceList([]byte(out)); err == nil {
		t.Fatal("reading the whole output gave no error")
	}
	if got, err := DecodeOutput([]byte(out), sent, list); err == nil {
		t.Errorf("no error; items %v", got.Items)
	}
}

// positions lists the line and column of n and of every node below it, depth first.
func positions(n *yaml.Node, to [][2]int) [][2]int {
	to = append(to, [2]int{n.Line, n.Column})
	for _, c := range n.Content {
		to = positions(c, to)
	}
	return to
}

func TestSplitJSONElements(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string // nil: not an array of objects and arrays
	}{
		{`[]`, []string{}},
		{` [ ]`, nil}, // the span starts at its bracket
		{`[ ]`, []string{}},
		{`[{"a":1}]`, []string{`{"a":1}`}},
		{"[ {\"a\":1} ,\n {\"b\":[2,{\"c\":\"]}\"}]} ]", []string{`{"a":1}`, `{"b":[2,{"c":"]}"}]}`}},
		{`[{"a":"\"}"},[1]]`, []string{`{"a":"\"}"}`, `[1]`}},
		{`[{"a":1}{"b":2}]`, nil},
		{`[{"a":1},]`, nil},
		{`[,{"a":1}]`, nil},
		{`[{"a":1},,{"b":2}]`, nil},
		{`[{"a":1},2]`, nil},
		{`["x"]`, nil},
		{`[{"a":1}`, nil},
		{`[{"a":1}]]`, nil},
	} {
		got := splitJSONElements([]byte(tc.in))
		var gotS []string
		if got != nil {
			gotS = []string{}
			for _, e := range got {
				gotS = append(gotS, string(e))
			}
		}
		if diff := cmp.Diff(tc.want, gotS); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
	}
}

package fn

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// sentList is a list as the pipeline sends it, and its YAML.
func sentList(t testing.TB) (*ResourceList, []byte) {
	t.Helper()
	list, _, err := DecodeResourceList([]byte(sampleList))
	if err != nil {
		t.Fatal(err)
	}
	list.Results = nil
	sent, err := list.Encode(YAML)
	if err != nil {
		t.Fatal(err)
	}
	return list, sent
}

func TestDecodeOutputReusesUnchangedItems(t *testing.T) {
	t.Parallel()
	list, sent := sentList(t)
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
			checkSameList(t, want, got)
		})
	}
	if got, err := DecodeOutput(sent, sent, nil); err != nil || len(got.Items) != 1 || got.Items[0] == list.Items[0] {
		t.Errorf("without the sent list: %v, items %v", err, got)
	}
}

// checkSameList fails unless got encodes as want does, results included.
func checkSameList(t *testing.T, want, got *ResourceList) {
	t.Helper()
	w, err := want.Encode(YAML)
	if err != nil {
		t.Fatal(err)
	}
	g, err := got.Encode(YAML)
	if err != nil {
		t.Fatal(err)
	}
	if string(w) != string(g) {
		t.Errorf("output read back differs from reading it:\n--- read\n%s\n--- reused\n%s", w, g)
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
			list := &ResourceList{Items: []*yaml.RNode{yaml.NewRNode(d.Content[0])}}
			sent, err := list.Encode(YAML)
			if err != nil {
				continue
			}
			want, _, err := DecodeResourceList(sent)
			if err != nil {
				continue
			}
			got, err := DecodeOutput(sent, sent, list)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if got.Items[0] == list.Items[0] {
				reused++
			}
			checkSameList(t, want, got)
		}
	}
	t.Logf("%d test data documents echoed came back unread", reused)
	if reused == 0 {
		t.Error("no echo came back unread")
	}
}

// FuzzDecodeOutput: whatever a function writes, DecodeOutput reads it as DecodeResourceList does,
// or hands back the sent items only where reading them gives the same list.
//
//	go test ./fn -run '^$' -fuzz FuzzDecodeOutput -fuzztime 60s
func FuzzDecodeOutput(f *testing.F) {
	_, sent := sentList(f)
	f.Add(string(sent))
	f.Add(string(sent) + "results:\n- message: x\n")
	f.Add(strings.Replace(string(sent), "functionConfig:", "# c\nfunctionConfig:", 1))
	f.Fuzz(func(t *testing.T, out string) {
		list, sent := sentList(t)
		got, err := DecodeOutput([]byte(out), sent, list)
		want, _, wantErr := DecodeResourceList([]byte(out))
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("error %v, reading it: %v", err, wantErr)
		}
		if err != nil {
			return
		}
		checkSameList(t, want, got)
	})
}

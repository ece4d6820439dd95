package evaluator

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

const skimHead = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"

func TestWithoutItems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{
			name: "items in the middle, comments among them",
			in:   skimHead + "items:\n# first\n- apiVersion: v1\n  kind: ConfigMap\n\n- apiVersion: v1 # second\n  kind: Secret\nfunctionConfig:\n  data: {a: b}\nresults:\n- message: hi\n",
			want: skimHead + "functionConfig:\n  data: {a: b}\nresults:\n- message: hi\n", ok: true,
		},
		{
			name: "indented items, CRLF, a comment after the key",
			in:   "kind: ResourceList\r\nitems: # all\r\n  - a: 1\r\n    b: 2\r\nfunctionConfig:\r\n  x: y\r\n",
			want: "kind: ResourceList\r\nfunctionConfig:\r\n  x: y\r\n", ok: true,
		},
		{name: "flow items", in: skimHead + "items: [{a: 1}]\n"},
		{name: "empty flow items", in: skimHead + "items: []\n"},
		{name: "anchored items", in: skimHead + "items: &i\n- a: 1\n"},
		{name: "no items", in: skimHead + "functionConfig: {}\n"},
		{name: "document marker", in: "---\n" + skimHead + "items:\n- a: 1\n"},
		{name: "directive", in: "%YAML 1.2\n---\n" + skimHead + "items:\n- a: 1\n"},
		{name: "JSON", in: `{"kind":"ResourceList","items":[]}`},
		{name: "quoted key", in: skimHead + "\"items\":\n- a: 1\n"},
		{name: "duplicate key", in: skimHead + "items:\n- a: 1\nitems:\n- b: 2\n"},
		{name: "an entry before any key", in: "- a\n" + skimHead + "items:\n- a: 1\n"},
		{name: "a tab at the start of a line", in: skimHead + "items:\n\t- a: 1\n"},
		{name: "a line broken by a CR alone", in: skimHead + "items:\n- a: 1\rfunctionConfig:\n x: 0\n"},
		{name: "a line broken by LS", in: skimHead + "items:\n- a: 1\u2028functionConfig:\n x: 0\n"},
		{name: "a key that is not a word", in: skimHead + "items:\n- a: 1\nx-y: 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := withoutItems([]byte(tt.in))
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%q)", ok, tt.ok, got)
			}
			if diff := cmp.Diff(tt.want, string(got)); ok && diff != "" {
				t.Errorf("withoutItems (-want +got):\n%s", diff)
			}
		})
	}
}

// skimSeeds are lists as Porch and functions write them, and some that the skim leaves to the
// whole read.
func skimSeeds() [][]byte {
	return [][]byte{
		fntest.Deployments(2, "shop"),
		[]byte(skimHead + "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\nfunctionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  data:\n    namespace: shop # here\nresults:\n- message: done\n  severity: info\n"),
		[]byte(skimHead + "items:\n- &a {x: 1}\nfunctionConfig: *a\n"),
		[]byte(skimHead + "items:\n- a: 1\nfunctionConfig: \"multi\nitems: 2\"\n"),
		[]byte(skimHead + "functionConfig:\n  a: |\n    items:\n    - b\nitems:\n- c: 1\n"),
		[]byte(skimHead + "items:\n- [unclosed\nfunctionConfig: {}\n"),
		[]byte(`{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[]}`),
	}
}

// skimList holds to the whole read: what it reads of a list (apiVersion, kind, functionConfig,
// results) is what reading the list whole gives, whenever that read succeeds; a list it refuses
// for its budget is refused by the whole read too.
func FuzzSkimList(f *testing.F) {
	for _, s := range skimSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		whole, _, werr := decodeList(ctx, data)
		skim, _, ok, serr := skimList(ctx, data)
		switch {
		case serr != nil:
			if werr == nil {
				t.Fatalf("skim refused what the whole read reads: %v", serr)
			}
		case ok && werr == nil:
			if diff := cmp.Diff(summary(whole), summary(skim)); diff != "" {
				t.Fatalf("skim differs from the whole read (-whole +skim):\n%s", diff)
			}
		}
	})
}

func TestSkimListSeeds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	skimmed := 0
	for _, s := range skimSeeds() {
		whole, _, werr := decodeList(ctx, s)
		skim, _, ok, serr := skimList(ctx, s)
		if serr != nil {
			t.Fatalf("%q: %v", s, serr)
		}
		if ok {
			skimmed++
		}
		if ok && werr == nil {
			if diff := cmp.Diff(summary(whole), summary(skim)); diff != "" {
				t.Errorf("%q: skim differs from the whole read (-whole +skim):\n%s", s, diff)
			}
		}
	}
	if skimmed < 2 {
		t.Errorf("%d seeds skimmed, want the plain ones (at least 2)", skimmed)
	}
}

type listSummary struct {
	APIVersion, FunctionConfig string
	Results                    []fn.Result
}

func summary(rl *fn.ResourceList) listSummary {
	s := listSummary{APIVersion: rl.APIVersion, Results: rl.Results}
	if rl.FunctionConfig != nil {
		s.FunctionConfig = rl.FunctionConfig.MustString()
	}
	return s
}

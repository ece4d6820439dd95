package web

import (
	"testing"

	"github.com/krm-catalog/krm-catalog/store"
)

func TestPagesShowGroupOwners(t *testing.T) {
	t.Parallel()
	byName := newSite(t, Config{Store: newFakeStore(t)})
	granted := newFakeStore(t)
	granted.grants = []store.Grant{{Group: "fn.example.com", Publisher: "other.org", GrantedAt: published}}
	byGrant := newSite(t, Config{Store: granted})
	mine := newFakeStore(t)
	mine.grants = []store.Grant{{Group: "fn.shared.io", Publisher: "example.com", GrantedAt: published}}
	withGrant := newSite(t, Config{Store: mine})

	for _, tc := range []struct {
		name    string
		h       func() result
		want    []string
		notWant []string
	}{
		{"function, owned by name", func() result { return get(t, byName, "/functions/fn.example.com/SetNamespace") },
			[]string{"Group owner", `<code>fn.example.com</code> belongs to <a href="/publishers/example.com">example.com</a> (by its name)`}, nil},
		{"function, its group granted to another", func() result { return get(t, byGrant, "/functions/fn.example.com/SetNamespace") },
			[]string{`belongs to <a href="/publishers/other.org">other.org</a> (by grant)`}, nil},
		{"publisher, by name", func() result { return get(t, byName, "/publishers/example.com") },
			[]string{"<code>example.com</code> and the groups under it, by its name"}, []string{"granted"}},
		{"publisher, with a grant", func() result { return get(t, withGrant, "/publishers/example.com") },
			[]string{"<code>example.com</code> and the groups under it, by its name", "<code>fn.shared.io</code> and the groups under it, granted"}, nil},
	} {
		r := tc.h()
		if r.status != 200 {
			t.Fatalf("%s: status %d", tc.name, r.status)
		}
		checkBody(t, tc.name, r.body, tc.want, tc.notWant)
	}
}

package store

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"regexp"
	"testing"
)

var (
	tsqueryShape = regexp.MustCompile(`^([\pL\pN]+:\*( & [\pL\pN]+:\*)*)?$`)
	exactShape   = regexp.MustCompile(`^[\pL\pN]*$`)
)

// FuzzPrefixQuery: whatever a person types becomes a tsquery of prefix words joined by &, and an
// exact kind of letters and digits, and nothing else: no tsquery operator or quote gets through.
func FuzzPrefixQuery(f *testing.F) {
	for _, seed := range []string{"", "namespace", "set lab", "a & b | !c", "'; DROP TABLE functions; --", "ümlaut 日本", "x:*", "(a)"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := searchText(text)
		if !tsqueryShape.MatchString(got.tsquery) || !exactShape.MatchString(got.exact) || (got.tsquery == "") != (got.exact == "") {
			t.Fatalf("searchText(%q) = %+v", text, got)
		}
	})
}

// FuzzPageToken: a page token is honoured only for the query it was issued for, and only with a
// tier and an offset in range; anything else is ErrBadPageToken, never a panic.
func FuzzPageToken(f *testing.F) {
	valid := func(rank, offset int, q SearchQuery) string {
		data, _ := json.Marshal(pageToken{Rank: rank, Offset: offset, Query: q.fingerprint()})
		return base64.RawURLEncoding.EncodeToString(data)
	}
	q := SearchQuery{Text: "namespace", Tags: []string{"mutator"}}
	for _, seed := range []string{valid(rankName, 20, q), valid(rankName, -1, q), valid(rankOther, maxOffset+1, q), valid(0, 20, q),
		valid(rankExact+1, 0, q), valid(rankName, 20, SearchQuery{}), "", "!!", "e30", "bnVsbA"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		q := q
		q.PageToken = token
		rank, offset, err := q.position(searchText(q.Text))
		if err != nil {
			if !errors.Is(err, ErrBadPageToken) {
				t.Fatalf("error %v is not ErrBadPageToken", err)
			}
			return
		}
		if offset < 0 || offset > maxOffset || rank < rankOther || rank > rankExact {
			t.Fatalf("rank %d, offset %d out of range", rank, offset)
		}
	})
}

func TestNameWords(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ group, kind, want string }{
		{"fn.example.com", "SetNamespace", "fn.example.com fn example com Set Namespace"},
		{"team-1.example.com", "SetLabels8", "team-1.example.com team 1 example com Set Labels 8"},
		{"x.io", "Ec2Instance", "x.io x io Ec 2 Instance"},
		{"x.io", "Lantern", "x.io x io Lantern"},
	} {
		if got := nameWords(tt.group, tt.kind); got != tt.want {
			t.Errorf("nameWords(%q, %q) = %q, want %q", tt.group, tt.kind, got, tt.want)
		}
	}
}

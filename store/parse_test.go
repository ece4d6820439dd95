package store

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"regexp"
	"testing"
)

var tsqueryShape = regexp.MustCompile(`^([\pL\pN]+:\*( & [\pL\pN]+:\*)*)?$`)

// FuzzPrefixQuery: whatever a person types becomes a tsquery of prefix words joined by &, and
// nothing else: no tsquery operator or quote gets through.
func FuzzPrefixQuery(f *testing.F) {
	for _, seed := range []string{"", "namespace", "set lab", "a & b | !c", "'; DROP TABLE functions; --", "ümlaut 日本", "x:*", "(a)"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got := prefixQuery(text); !tsqueryShape.MatchString(got) {
			t.Fatalf("prefixQuery(%q) = %q", text, got)
		}
	})
}

// FuzzPageToken: a page token is honoured only for the query it was issued for, and only with an
// offset in range; anything else is ErrBadPageToken, never a panic.
func FuzzPageToken(f *testing.F) {
	valid := func(offset int, q SearchQuery) string {
		data, _ := json.Marshal(pageToken{Offset: offset, Query: q.fingerprint()})
		return base64.RawURLEncoding.EncodeToString(data)
	}
	q := SearchQuery{Text: "namespace", Tags: []string{"mutator"}}
	for _, seed := range []string{valid(20, q), valid(-1, q), valid(maxOffset+1, q), valid(20, SearchQuery{}), "", "!!", "e30", "bnVsbA"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		q := q
		q.PageToken = token
		offset, err := q.pageOffset()
		if err != nil {
			if !errors.Is(err, ErrBadPageToken) {
				t.Fatalf("error %v is not ErrBadPageToken", err)
			}
			return
		}
		if offset < 0 || offset > maxOffset {
			t.Fatalf("offset %d out of range", offset)
		}
	})
}

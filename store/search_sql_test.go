package store

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/search")

// TestSearchSQLGolden holds the text and the arguments of every shape of search statement to the
// files in testdata/search: the page of each tier, the counts with and without text, with no filter,
// one filter of each kind and several, and the probe of a filtered text search. A change to the SQL
// shows in review as a change to these files; `go test ./store -run SearchSQLGolden -update`
// rewrites them. No database is needed.
func TestSearchSQLGolden(t *testing.T) {
	t.Parallel()
	filters := []struct {
		name string
		q    SearchQuery
	}{
		{"nofilter", SearchQuery{}},
		{"tag", SearchQuery{Tags: []string{"networking"}}},
		{"publisher", SearchQuery{Publisher: "acme"}},
		{"runtime", SearchQuery{Runtime: "exec"}},
		{"filters", SearchQuery{Tags: []string{"networking", "security"}, Publisher: "acme", Runtime: "exec"}},
	}
	type shape struct {
		name string
		sql  string
		args []any
	}
	var shapes []shape
	for _, f := range filters {
		for _, text := range []string{"", "set names"} {
			q := f.q
			q.Text = text
			t := searchText(text)
			if text != "" {
				// as Store.expand reads "set names": "set" expanded, "name" left a prefix
				set, _ := expandedWord("'set':*", true, []string{"set", "setup"})
				name, _ := expandedWord("'name':*", true, nil)
				t.query, t.expanded = set+" & "+name, true
				t.share = 0.01
			}
			withText := "notext"
			if text != "" {
				withText = "text"
			}
			sql, args, parts := countStatement(q, t, DefaultSearchProbe, DefaultSearchSample)
			shapes = append(shapes, shape{fmt.Sprintf("count-%s-%s", withText, f.name), sql + partsComment(parts), args})
			ranks := []int{0}
			if text != "" {
				ranks = []int{rankExact, rankName, rankDescription, rankOther}
			}
			for _, rank := range ranks {
				sql, args := pageStatement(q, t, rank, 21, 40)
				shapes = append(shapes, shape{fmt.Sprintf("page-%s-rank%d-%s", withText, rank, f.name), sql, args})
			}
		}
	}
	seen := map[string]bool{}
	// one word is not expanded (Store.expand), and sampled as before
	sql, args, parts := countStatement(SearchQuery{Text: "namespace"}, searchText("namespace"), DefaultSearchProbe, DefaultSearchSample)
	shapes = append(shapes, shape{"count-text-nofilter-oneword", sql + partsComment(parts), args})
	for _, s := range shapes {
		if seen[s.name] {
			t.Fatalf("two shapes named %s would share a golden file", s.name)
		}
		seen[s.name] = true
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			args, err := json.Marshal(s.args)
			if err != nil {
				t.Fatal(err)
			}
			got := s.sql + "\n-- args: " + string(args) + "\n"
			path := filepath.Join("testdata", "search", s.name+".sql")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./store -run SearchSQLGolden -update writes it)", err)
			}
			if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); diff != "" {
				t.Errorf("%s (-golden +now; -update rewrites it):\n%s", path, diff)
			}
		})
	}
}

// partsComment shows which sample each part of a count statement counts.
func partsComment(parts [countTotal + 1]int) string {
	return fmt.Sprintf("\n-- samples of publisher, tag, runtime, total (-1: kept): %v", parts)
}

// TestExpandedWord: how one word of a search becomes part of the tsquery.
func TestExpandedWord(t *testing.T) {
	t.Parallel()
	many := make([]string, maxExpansion+1)
	for i := range many {
		many[i] = fmt.Sprintf("s%02d", i)
	}
	tests := []struct {
		name     string
		query    string
		isPrefix bool
		lexemes  []string
		want     string
		expanded bool
	}{
		{"stop word", "", false, nil, "", false},
		{"expanded", "'ensur':*", true, []string{"ensur", "ensurance"}, "('ensur' | 'ensurance')", true},
		{"quoted", "'o':*", true, []string{`o's`, `o\k`}, `('o''s' | 'o\\k')`, true},
		{"no word of the index", "'zz':*", true, nil, "('zz':*)", false},
		{"too many", "'s':*", true, many, "('s':*)", false},
		{"not one prefix", "'k':* & '8s':*", false, nil, "('k':* & '8s':*)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, expanded := expandedWord(tt.query, tt.isPrefix, tt.lexemes)
			if got != tt.want || expanded != tt.expanded {
				t.Errorf("expandedWord = %q, %v; want %q, %v", got, expanded, tt.want, tt.expanded)
			}
		})
	}
}

package apiclient

import (
	"encoding/json"
	"testing"
)

func TestSearchResultTotalCapped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"total": 3}`, false},
		{`{"total": 3, "totalCapped": false}`, false},
		{`{"total": 1000, "totalCapped": true}`, true},
		{`{"total": 1000, "totalCapped": 1000}`, true},
		{`{"total": 3, "totalCapped": 0}`, false},
		{`{"total": 3, "totalCapped": null}`, false},
	} {
		var r SearchResult
		if err := json.Unmarshal([]byte(tc.body), &r); err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if r.TotalCapped != tc.want || r.Total == 0 {
			t.Errorf("%s: capped %v total %d, want capped %v", tc.body, r.TotalCapped, r.Total, tc.want)
		}
	}
}

// FuzzSearchResult: whatever a service answers, reading it does not panic, and what was read
// survives a round trip.
func FuzzSearchResult(f *testing.F) {
	f.Add([]byte(`{"functions":[{"group":"g","kind":"K","versions":["v1"]}],"total":1,"totalCapped":true,"facets":{"tag":[{"value":"a","count":1}]}}`))
	f.Add([]byte(`{"totalCapped":"yes"}`))
	f.Add([]byte(`{"totalCapped":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r SearchResult
		if json.Unmarshal(data, &r) != nil {
			return
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var r2 SearchResult
		if err := json.Unmarshal(again, &r2); err != nil || r2.TotalCapped != r.TotalCapped || r2.Total != r.Total {
			t.Fatalf("round trip: %v, %+v != %+v", err, r2, r)
		}
	})
}

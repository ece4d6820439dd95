package httpx

import "testing"

func TestETagMatches(t *testing.T) {
	t.Parallel()
	const etag = `"sha256-abc"`
	for header, want := range map[string]bool{
		"":                          false,
		`"sha256-abc"`:              true,
		`W/"sha256-abc"`:            true,
		`"x", "sha256-abc"`:         true,
		"*":                         true,
		`"sha256-abd"`:              false,
		`"sha256-abc`:               false,
		`"other",  W/"sha256-abc" `: true,
	} {
		if got := ETagMatches(header, etag); got != want {
			t.Errorf("ETagMatches(%q) = %v, want %v", header, got, want)
		}
	}
}

func TestQuality(t *testing.T) {
	t.Parallel()
	tests := []struct {
		accept, mediaType string
		want              float64
	}{
		{"", "application/json", 1},
		{"application/json", "application/json", 1},
		{"application/json;q=0.5", "application/json", 0.5},
		{"application/yaml", "application/json", 0},
		{"application/*;q=0.3, */*;q=0.1", "application/json", 0.3},
		{"*/*;q=0.2, application/json;q=0", "application/json", 0},
		{"APPLICATION/JSON; Q=0.7", "application/json", 0.7},
		{"application/json;q=bogus", "application/json", 1},
		{"text/*", "application/json", 0},
	}
	for _, tc := range tests {
		if got := Quality(tc.accept, tc.mediaType); got != tc.want {
			t.Errorf("Quality(%q, %q) = %v, want %v", tc.accept, tc.mediaType, got, tc.want)
		}
	}
}

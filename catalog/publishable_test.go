package catalog

import (
	"errors"
	"os"
	"testing"
)

func TestReadPublishable(t *testing.T) {
	t.Parallel()
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file        string
		wantName    string
		wantCatalog bool
		wantInvalid bool
		wantErr     error
	}{
		{file: "testdata/reference/catalog.yaml", wantName: "example-functions", wantCatalog: true},
		{file: "testdata/valid/01-definition-container.yaml", wantName: "", wantCatalog: false},
		{file: "testdata/valid/08-multi-document-stream.yaml", wantErr: ErrNotPublishable},
		{file: "testdata/valid/12-resource-list.yaml", wantErr: ErrNotPublishable},
		{file: "testdata/invalid/" + firstInvalid(t), wantInvalid: true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			p, findings, err := v.ReadPublishable(tc.file, data)
			switch {
			case tc.wantInvalid:
				if !findings.HasErrors() || p != nil {
					t.Fatalf("findings %v, publishable %v: want errors and nothing to publish", findings, p)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) || p != nil {
					t.Fatalf("error %v, publishable %v: want %v", err, p, tc.wantErr)
				}
			default:
				if err != nil || p == nil {
					t.Fatalf("error %v, publishable %v", err, p)
				}
				if (p.Catalog != nil) != tc.wantCatalog || (p.Definition != nil) == tc.wantCatalog {
					t.Fatalf("catalog %v, definition %v: want exactly one, a catalog: %v", p.Catalog != nil, p.Definition != nil, tc.wantCatalog)
				}
				if tc.wantName != "" && p.Name() != tc.wantName {
					t.Errorf("Name() = %q, want %q", p.Name(), tc.wantName)
				}
				if p.Name() == "" {
					t.Error("Name() is empty")
				}
			}
		})
	}
}

// firstInvalid names a document of the invalid corpus.
func firstInvalid(t *testing.T) string {
	t.Helper()
	entries, err := os.ReadDir("testdata/invalid")
	if err != nil || len(entries) == 0 {
		t.Fatalf("the invalid corpus: %v", err)
	}
	return entries[0].Name()
}

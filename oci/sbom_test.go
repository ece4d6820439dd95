package oci_test

import (
	"errors"
	"testing"

	"github.com/krm-catalog/krm-catalog/oci"
)

func TestDetectSBOM(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"SPDX 2.3", `{"spdxVersion": "SPDX-2.3", "SPDXID": "SPDXRef-DOCUMENT"}`, oci.MediaTypeSPDX},
		{"CycloneDX 1.5", `{"bomFormat": "CycloneDX", "specVersion": "1.5"}`, oci.MediaTypeCycloneDX},
		{"CycloneDX without specVersion", `{"bomFormat": "CycloneDX"}`, ""},
		{"SPDX tag-value", "SPDXVersion: SPDX-2.3\nDataLicense: CC0-1.0\n", ""},
		{"SPDX version not SPDX-", `{"spdxVersion": "2.3"}`, ""},
		{"both", `{"spdxVersion": "SPDX-2.3", "bomFormat": "CycloneDX", "specVersion": "1.5"}`, ""},
		{"another JSON document", `{"name": "x"}`, ""},
		{"an array", `[]`, ""},
		{"wrong types", `{"spdxVersion": 2, "bomFormat": ["CycloneDX"]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := oci.DetectSBOM([]byte(tc.doc))
			if got != tc.want {
				t.Errorf("DetectSBOM = %q, want %q", got, tc.want)
			}
			if (tc.want == "") != errors.Is(err, oci.ErrNotSBOM) {
				t.Errorf("DetectSBOM error = %v", err)
			}
		})
	}
}

// FuzzDetectSBOM: an SBOM file is outside input; what passes names one format, and the format is
// the one its field says.
func FuzzDetectSBOM(f *testing.F) {
	for _, s := range []string{`{"spdxVersion": "SPDX-2.3"}`, `{"bomFormat": "CycloneDX", "specVersion": "1.6"}`, `{}`, `[`, `{"spdxVersion": "SPDX-"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mt, err := oci.DetectSBOM(data)
		if err != nil {
			if mt != "" {
				t.Errorf("an error with a media type %q", mt)
			}
			return
		}
		if !oci.IsSBOM(mt) {
			t.Errorf("DetectSBOM passed with %q", mt)
		}
	})
}

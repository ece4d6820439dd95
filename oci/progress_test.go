package oci_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/oci"
)

func TestTerminalProgress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		size     int64
		err      error
		wantDraw bool
		wantEnd  string
	}{
		{"small transfers are quiet", 1 << 20, nil, false, ""},
		{"large transfer", 3 << 20, nil, true, "done\n"},
		{"failed transfer", 3 << 20, errors.New("boom"), true, "failed\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			p := oci.NewTerminalProgress(&out)
			w, done := p.Start("fn", tc.size)
			chunk := make([]byte, 64<<10)
			for n := int64(0); n < tc.size; n += int64(len(chunk)) {
				w.Write(chunk)
			}
			done(tc.err)
			got := out.String()
			if !tc.wantDraw {
				if got != "" {
					t.Errorf("drew %q for a %d-byte transfer", got, tc.size)
				}
				return
			}
			if !strings.HasPrefix(got, "\rfn  0 B / 3.0 MiB    0%") || !strings.HasSuffix(got, "3.0 MiB / 3.0 MiB  100%  "+tc.wantEnd) {
				t.Errorf("progress output %q", got)
			}
		})
	}
}

package cmd

import (
	"strings"
	"testing"
)

func TestByteSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "2GiB", want: 2 << 30},
		{in: "512MiB", want: 512 << 20},
		{in: "1MB", want: 1_000_000},
		{in: "1048576", want: 1 << 20},
		{in: "0", wantErr: "above 0"},
		{in: "lots", wantErr: "not a size"},
		{in: "-1GiB", wantErr: "not a size"},
		{in: "16EiB", wantErr: "not a size"},
	}
	for _, tc := range tests {
		var b byteSize
		err := b.Set(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Set(%q) = %v, %v; want an error containing %q", tc.in, int64(b), err, tc.wantErr)
			}
			continue
		}
		if err != nil || int64(b) != tc.want {
			t.Errorf("Set(%q) = %d, %v; want %d", tc.in, int64(b), err, tc.want)
		}
	}
}

func FuzzByteSize(f *testing.F) {
	for _, s := range []string{"2GiB", "1", "0", "1.5 MB", "9999999999999999999999", "-3k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b byteSize
		if err := b.Set(s); err != nil {
			return
		}
		if b <= 0 {
			t.Fatalf("Set(%q) accepted %d", s, int64(b))
		}
		var again byteSize
		if err := again.Set(b.String()); err != nil {
			t.Fatalf("Set(%q) = %d, whose String %q does not parse: %v", s, int64(b), b.String(), err)
		}
	})
}

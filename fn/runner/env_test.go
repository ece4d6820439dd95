package runner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseEnv(t *testing.T) {
	t.Parallel()
	lookup := func(name string) (string, bool) {
		v, ok := map[string]string{"SET": "from-caller", "EMPTY": ""}[name]
		return v, ok
	}
	tests := []struct {
		name    string
		specs   []string
		want    []string
		wantErr string
	}{
		{name: "none", specs: nil, want: nil},
		{name: "value given", specs: []string{"A=1", "B=x=y", "C="}, want: []string{"A=1", "B=x=y", "C="}},
		{name: "value of the caller", specs: []string{"SET", "EMPTY"}, want: []string{"SET=from-caller", "EMPTY="}},
		{name: "unset name passes nothing", specs: []string{"UNSET"}, want: nil},
		{name: "empty", specs: []string{""}, wantErr: "give NAME or NAME=VALUE"},
		{name: "no name", specs: []string{"=1"}, wantErr: "give NAME"},
		{name: "bad name", specs: []string{"A-B=1"}, wantErr: `"A-B" is not a variable name`},
		{name: "leading digit", specs: []string{"1A"}, wantErr: "not a variable name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseEnv(tc.specs, lookup)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseEnv(%q) = %q, %v; want an error containing %q", tc.specs, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseEnv(%q) (-want +got):\n%s", tc.specs, diff)
			}
		})
	}
}

func FuzzParseEnv(f *testing.F) {
	for _, s := range []string{"A=1", "NAME", "", "=", "1A", "A_b9=x=y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		env, err := ParseEnv([]string{spec}, func(string) (string, bool) { return "v", true })
		if err != nil {
			return
		}
		if len(env) != 1 {
			t.Fatalf("ParseEnv(%q) = %q: one value expected", spec, env)
		}
		name, _, ok := strings.Cut(env[0], "=")
		if !ok || name == "" || strings.ContainsAny(name, "= \x00") {
			t.Fatalf("ParseEnv(%q) = %q: not NAME=VALUE", spec, env)
		}
	})
}

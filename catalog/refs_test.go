package catalog

import (
	"strings"
	"testing"
)

func TestImageRefCompleted(t *testing.T) {
	t.Parallel()
	const prefix = "registry.example.com/fns"
	for _, tc := range []struct{ in, prefix, want string }{
		{"set-labels:v0.2", prefix, prefix + "/set-labels:v0.2"},
		{"set-labels", prefix, prefix + "/set-labels:latest"},
		{"set-labels", prefix + "/", prefix + "/set-labels:latest"},
		{"set-labels@sha256:" + strings.Repeat("a", 64), prefix, prefix + "/set-labels@sha256:" + strings.Repeat("a", 64)},
		{"other.example.com/x/set-labels:v1", prefix, "other.example.com/x/set-labels:v1"},
		{"library/nginx", prefix, "library/nginx:latest"}, // a slash: kpt leaves it as it is
		{"set-labels:v0.2", "", "set-labels:v0.2"},
		{"set-labels", "", "set-labels:latest"},
	} {
		ref, err := ParseImage(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := ref.Completed(tc.prefix).String(); got != tc.want {
			t.Errorf("%q completed with %q: %q, want %q", tc.in, tc.prefix, got, tc.want)
		}
	}
}

package catalog

import "testing"

func TestRuntimeDigests(t *testing.T) {
	t.Parallel()
	sum := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		runtime interface{ Digest() string }
		want    string
	}{
		{ContainerRuntime{Image: "example.com/fn:v1"}, ""},
		{ContainerRuntime{Image: "example.com/fn:v1", SHA256: sum}, "sha256:" + sum},
		{ContainerRuntime{Image: "example.com/fn@sha256:" + sum}, "sha256:" + sum},
		{StarlarkRuntime{URI: "https://example.com/fn.star"}, ""},
		{StarlarkRuntime{URI: "https://example.com/fn.star", SHA256: sum}, "sha256:" + sum},
		{StarlarkRuntime{Ref: "example.com/fn@sha256:" + sum}, "sha256:" + sum},
	}
	for _, tc := range tests {
		if got := tc.runtime.Digest(); got != tc.want {
			t.Errorf("%+v.Digest() = %q, want %q", tc.runtime, got, tc.want)
		}
	}
}

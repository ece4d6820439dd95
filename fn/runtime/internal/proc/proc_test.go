package proc

import "testing"

// The summary of a failed call keeps the cause, not docker's pointer at --help after it.
func TestLastLine(t *testing.T) {
	t.Parallel()
	tests := []struct{ stderr, want string }{
		{"one\ntwo\n", "two"},
		{"only", "only"},
		{"Unable to find image 'registry.example.com/fn:v1' locally\ndocker: Error response from daemon: Get \"https://registry.example.com/v2/\": dial tcp: lookup registry.example.com: no such host.\nSee 'docker run --help'.\n",
			"docker: Error response from daemon: Get \"https://registry.example.com/v2/\": dial tcp: lookup registry.example.com: no such host."},
		{"Error: short\nRun 'podman run --help' for more information\n", "Error: short"},
		{"See 'docker run --help'.\n", "See 'docker run --help'."},
	}
	for _, tc := range tests {
		if got := lastLine(tc.stderr); got != tc.want {
			t.Errorf("lastLine(%q) = %q, want %q", tc.stderr, got, tc.want)
		}
	}
}

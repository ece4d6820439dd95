package loopback

import "testing"

func TestIs(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost:5000": true, "LOCALHOST": true, "127.0.0.1": true, "127.1.2.3:80": true, "[::1]:5000": true, "::1": true,
		"registry.example.com": false, "registry.example.com:5000": false, "10.0.0.1:5000": false, "localhost.example.com": false,
		"": false, "[::2]:80": false, "0.0.0.0": false,
	} {
		if got := Is(host); got != want {
			t.Errorf("Is(%q) = %v, want %v", host, got, want)
		}
	}
}

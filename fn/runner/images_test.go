package runner

import "testing"

func TestSameImage(t *testing.T) {
	t.Parallel()
	const digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cat := &catalogImage{repo: "example.com/fns/set-ns", tag: "v1", digest: digest}
	for image, want := range map[string]bool{
		"example.com/fns/set-ns:v1":                          true,
		"example.com/fns/set-ns@sha256:" + digest:            true,
		"example.com/fns/set-ns:v2@sha256:" + digest:         true,
		"example.com/fns/set-ns:v2":                          false,
		"example.com/fns/set-ns":                             false,
		"example.com/other/set-ns:v1":                        false,
		"localhost:5000/fns/set-ns:v1":                       false,
		"example.com/fns/set-ns@sha256:" + digest[:63] + "0": false,
	} {
		if got := sameImage(cat, image); got != want {
			t.Errorf("sameImage(%q) = %t, want %t", image, got, want)
		}
	}
	if repo, tag, _ := SplitImage("localhost:5000/fns/starlark:v0.4"); repo != "localhost:5000/fns/starlark" || tag != "v0.4" {
		t.Errorf("SplitImage: %q %q", repo, tag)
	}
}

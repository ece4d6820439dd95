package container

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRunArgs(t *testing.T) {
	t.Parallel()
	img := "registry.example.com/fn@sha256:" + strings.Repeat("a", 64)
	locked := []string{"run", "--rm", "--name", "n", "--user", "nobody", "--security-opt=no-new-privileges", "--cap-drop=ALL", "--log-driver=none"}
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"locked down", Config{Image: img}, append(append([]string{}, locked...), "--network", "none", "-i", img)},
		{"network granted", Config{Image: img, Network: true}, append(append([]string{}, locked...), "-i", img)},
		{"mount and env", Config{Image: img, Mounts: []string{"type=bind,source=/d,target=/d,readonly"}, Env: []string{"A=1"}, Args: []string{"--x"}},
			append(append([]string{}, locked...), "--network", "none", "--mount", "type=bind,source=/d,target=/d,readonly", "--env", "A=1", "-i", img, "--x")},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.cfg.runArgs("n", "-i")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestEngine(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) { return v, k == EnvEngine }
	}
	if _, err := Engine(env("rkt")); err == nil || !strings.Contains(err.Error(), "docker or podman") {
		t.Errorf("KRM_FN_RUNTIME=rkt: error = %v", err)
	}
	if _, err := Engine(func(string) (string, bool) { return "", false }); err != nil && !strings.Contains(err.Error(), "no container engine") {
		t.Errorf("without KRM_FN_RUNTIME: error = %v", err)
	}
}

func TestMountAllowed(t *testing.T) {
	t.Parallel()
	for m, ok := range map[string]bool{
		"type=bind,source=/a,target=/b":    true,
		"type=bind,src=/a,dst=/b,readonly": true,
		"type=tmpfs,target=/tmp":           true,
		"source=/a,target=/b":              false,
		"type=bind,target=/b":              false,
		"type=volume,source=v":             false,
	} {
		if err := MountAllowed(m); (err == nil) != ok {
			t.Errorf("MountAllowed(%q) = %v", m, err)
		}
	}
}

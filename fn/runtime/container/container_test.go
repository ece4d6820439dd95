package container

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRunArgs(t *testing.T) {
	t.Parallel()
	img := "registry.example.com/fn@sha256:" + strings.Repeat("a", 64)
	locked := []string{"run", "--rm", "--name", "n", "--user", "nobody", "--security-opt=no-new-privileges", "--cap-drop=ALL", "--log-driver=none",
		"--read-only", "--tmpfs=/tmp:rw,noexec,nosuid,nodev,size=67108864", "--memory=2147483648", "--memory-swap=2147483648", "--pids-limit=256"}
	limited := []string{"run", "--rm", "--name", "n", "--user", "nobody", "--security-opt=no-new-privileges", "--cap-drop=ALL", "--log-driver=none",
		"--read-only", "--tmpfs=/tmp:rw,noexec,nosuid,nodev,size=67108864", "--memory=67108864", "--memory-swap=67108864", "--pids-limit=16"}
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"locked down", Config{Image: img}, append(append([]string{}, locked...), "--network", "none", "-i", img)},
		{"network granted", Config{Image: img, Network: true}, append(append([]string{}, locked...), "-i", img)},
		{"mount and env", Config{Image: img, Mounts: []string{"type=bind,source=/d,target=/d,readonly"}, Env: []string{"A=1"}, Args: []string{"--x"}},
			append(append([]string{}, locked...), "--network", "none", "--mount", "type=bind,source=/d,target=/d,readonly", "--env", "A=1", "-i", img, "--x")},
		{"limits raised or lowered", Config{Image: img, Memory: 64 << 20, PidsLimit: 16}, append(append([]string{}, limited...), "--network", "none", "-i", img)},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.cfg.runArgs("n", "-i")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestEngine(t *testing.T) {
	// Not parallel: PATH is set per case so that the result does not depend on what the machine has.
	withPodman := t.TempDir()
	podman := filepath.Join(withPodman, "podman")
	if err := os.WriteFile(podman, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	withBoth := t.TempDir()
	for _, name := range []string{"docker", "podman"} {
		if err := os.WriteFile(filepath.Join(withBoth, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		path    string
		engine  string // KRM_FN_RUNTIME; "" for unset
		want    string
		wantErr string
	}{
		{name: "nothing installed", path: t.TempDir(), wantErr: "no container engine"},
		{name: "docker by default", path: withBoth, want: filepath.Join(withBoth, "docker")},
		{name: "podman found when docker is missing", path: withPodman, want: podman},
		{name: "engine chosen and found", path: withPodman, engine: "podman", want: podman},
		{name: "engine chosen but missing", path: withPodman, engine: "docker", wantErr: "KRM_FN_RUNTIME=docker"},
		{name: "engine not supported", path: withPodman, engine: "rkt", wantErr: "docker or podman"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.path)
			got, err := Engine(func(k string) (string, bool) { return tc.engine, k == EnvEngine && tc.engine != "" })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Engine() = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Engine() = %q, %v; want %q", got, err, tc.want)
			}
		})
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

// Package release holds the tests of how krm-catalog reaches its users: `go install
// MODULE/cmd/krm-catalog@VERSION` from a module proxy, and scripts/release.sh's artifacts, built
// twice to the same bytes.
package release

import (
	"path/filepath"
	"strings"
	"testing"
)

// The CLI installs the way Go tools install: `go install github.com/krm-catalog/krm-catalog/cmd/
// krm-catalog@VERSION`, from a module proxy (here a file-system one built from the tree, in front
// of the usual proxy for the other modules), and prints that version.
func TestGoInstallFromModuleProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI from a module proxy (a minute or more): not with -short")
	}
	t.Parallel()
	const version = "v0.0.0-20260101000000-0123456789ab"
	tmp := t.TempDir()
	proxy := writeModuleProxy(t, repoRoot(t), filepath.Join(tmp, "proxy"), version)
	gobin := filepath.Join(tmp, "bin")
	env := goEnv(
		"GOPROXY="+proxy,
		// the tree's modules are in no checksum database
		"GONOSUMDB="+mainModule,
		"GOFLAGS=-mod=mod",
		"GOBIN="+gobin,
		"CGO_ENABLED=0",
	)
	run(t, tmp, env, "go", "install", mainModule+"/cmd/krm-catalog@"+version)
	out := run(t, tmp, env, filepath.Join(gobin, "krm-catalog"), "version")
	t.Logf("krm-catalog version: %s", strings.TrimSpace(out))
	if !strings.HasPrefix(out, "krm-catalog "+version+" ") {
		t.Errorf("krm-catalog version printed %q, want the version installed, %s", out, version)
	}
}

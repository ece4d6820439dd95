package release

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// scripts/release.sh run twice gives the same bytes: the same SHA256SUMS, over binaries, SBOMs,
// image and chart. The platforms are KRM_CATALOG_RELEASE_PLATFORMS's (default linux/amd64 alone:
// the four take four cross builds, minutes on a cold cache, while the determinism under test is
// the same). The artifacts are then used: the binary and the image (docker load, docker run) print
// the version, the chart renders with the image as its default.
func TestReleaseReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release twice: not with -short")
	}
	t.Parallel()
	platforms := os.Getenv("KRM_CATALOG_RELEASE_PLATFORMS")
	if platforms == "" {
		platforms = "linux/amd64"
	}
	// a version of its own: the image loaded into a shared Docker engine is this test's alone
	version := fmt.Sprintf("v0.0.0-ci.%d", time.Now().UnixNano())
	root := repoRoot(t)
	var sums [2][]byte
	var dist string
	for i := range sums {
		dist = filepath.Join(t.TempDir(), "dist")
		env := append(os.Environ(), "RELEASE_PLATFORMS="+platforms, "RELEASE_DIST="+dist)
		out := run(t, root, env, filepath.Join(root, "scripts", "release.sh"), version)
		dist = strings.TrimSpace(out[strings.LastIndexByte(strings.TrimSpace(out), '\n')+1:])
		var err error
		if sums[i], err = os.ReadFile(filepath.Join(dist, "SHA256SUMS")); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("SHA256SUMS:\n%s", sums[0])
	if diff := cmp.Diff(string(sums[0]), string(sums[1])); diff != "" {
		t.Errorf("two runs of scripts/release.sh differ (-first +second):\n%s", diff)
	}
	for _, p := range strings.Fields(platforms) {
		name := "krm-catalog_" + version + "_" + strings.ReplaceAll(p, "/", "_")
		for _, f := range []string{name, name + ".spdx.json"} {
			if !bytes.Contains(sums[0], []byte("  "+f+"\n")) {
				t.Errorf("SHA256SUMS lists no %s", f)
			}
		}
	}
	chart := filepath.Join(dist, "krm-catalog-"+strings.TrimPrefix(version, "v")+".tgz")
	if !bytes.Contains(sums[0], []byte(filepath.Base(chart))) {
		t.Errorf("SHA256SUMS lists no %s", filepath.Base(chart))
	}

	bin := filepath.Join(dist, "krm-catalog_"+version+"_linux_amd64")
	if _, err := os.Stat(bin); err != nil {
		return // the rest uses the linux/amd64 build
	}
	if out := run(t, dist, os.Environ(), bin, "version"); !strings.HasPrefix(out, "krm-catalog "+version+" ") {
		t.Errorf("the binary's version: %q, want %s", out, version)
	}
	helm := filepath.Join(testenv.ToolsDir(), "helm")
	rendered := run(t, dist, os.Environ(), helm, "template", "rel", chart, "--kube-version", "v1.31.0", "--set", "database.url=postgres://db/krm")
	if want := "image: krm-catalog:" + version + "\n"; !strings.Contains(rendered, want) {
		t.Errorf("the chart's Deployment has no %q", strings.TrimSpace(want))
	}

	if err := exec.Command("docker", "info").Run(); err != nil {
		testenv.Missing(t, "a Docker engine", "install Docker (Debian: apt-get install docker.io) to load and run the release's image")
		return
	}
	image := filepath.Join(dist, "krm-catalog_"+version+"_image_linux_amd64.tar")
	ref := "krm-catalog:" + version
	run(t, dist, os.Environ(), "docker", "load", "-i", image)
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", ref).Run() })
	if out := run(t, dist, os.Environ(), "docker", "run", "--rm", ref, "version"); !strings.HasPrefix(out, "krm-catalog "+version+" ") {
		t.Errorf("the image's version: %q, want %s", out, version)
	}
}

package cmd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

// Interop with the real CLIs: oras reads what push writes and push's reader reads what oras
// writes; cosign verifies what sign writes and verify accepts what cosign signs, in both of its
// formats. .ci/tools.sh builds the CLIs at pinned versions.

// tool is a CLI .ci/tools.sh builds, built into the tools cache when missing (testenv.Tool).
func tool(t testing.TB, name string) string {
	t.Helper()
	return testenv.Tool(t, name)
}

// cli runs an external CLI in dir and returns its combined output and whether it succeeded.
func cli(t *testing.T, dir, bin string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	// cosign keeps its TUF cache under $HOME unless told otherwise; the test keeps it to itself.
	cmd.Env = append(os.Environ(), "TUF_ROOT="+filepath.Join(dir, "tuf"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err == nil
}

func mustCLI(t *testing.T, dir, bin string, args ...string) string {
	t.Helper()
	out, ok := cli(t, dir, bin, args...)
	if !ok {
		t.Fatalf("%s %s failed:\n%s", filepath.Base(bin), strings.Join(args, " "), out)
	}
	return out
}

func sameFile(t *testing.T, want, got string) {
	t.Helper()
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w, g) {
		t.Errorf("%s differs from %s", got, want)
	}
}

const catalogMediaType = "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"

func TestOCIInterop(t *testing.T) {
	oras := tool(t, "oras")
	cosign2 := tool(t, "cosign-v2")
	cosign3 := tool(t, "cosign-v3")
	dir := ociEnv(t)
	// Keys made by cosign itself: sign must read cosign's key file format.
	mustCLI(t, dir, cosign2, "generate-key-pair")
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, other, cosign2, "generate-key-pair")
	key, pub, otherPub := filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub"), filepath.Join(other, "cosign.pub")
	catalogFile, err := filepath.Abs("../../../catalog/testdata/reference/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}

	for _, reg := range registrytest.Both(t) {
		t.Run(reg.Name, func(t *testing.T) {
			work := filepath.Join(dir, reg.Name)
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Run("oras pulls what push wrote", func(t *testing.T) {
				ref := reg.Host + "/interop/ours:v1"
				mustRun(t, ExitOK, "", "push", ref, catalogFile)
				out := filepath.Join(work, "oras-pull")
				mustCLI(t, work, oras, "pull", "--plain-http", "-o", out, ref)
				sameFile(t, catalogFile, filepath.Join(out, "catalog.yaml"))

				bin := writeTestFile(t, work, "fn", "arm64 binary", 0o755)
				amd := writeTestFile(t, work, "fn-amd64", "amd64 binary", 0o755)
				execRef := reg.Host + "/interop/exec:v1"
				mustRun(t, ExitOK, "", "push", "--type", "exec", "--platform", "linux/arm64="+bin, "--platform", "linux/amd64="+amd, execRef)
				execOut := filepath.Join(work, "oras-exec")
				mustCLI(t, work, oras, "pull", "--plain-http", "--platform", "linux/arm64", "-o", execOut, execRef)
				sameFile(t, bin, filepath.Join(execOut, "fn"))
			})
			t.Run("pull reads what oras push wrote", func(t *testing.T) {
				src := filepath.Join(work, "oras-src")
				if err := os.MkdirAll(src, 0o755); err != nil {
					t.Fatal(err)
				}
				data, _ := os.ReadFile(catalogFile)
				writeTestFile(t, src, "catalog.yaml", string(data), 0o644)
				for _, tc := range []struct{ tag, artifactType string }{
					{"typed", catalogMediaType},
					{"untyped", ""}, // oras's default artifactType, our layer media type
				} {
					ref := reg.Host + "/interop/theirs:" + tc.tag
					args := []string{"push", "--plain-http", ref, "catalog.yaml:" + catalogMediaType}
					if tc.artifactType != "" {
						args = append(args, "--artifact-type", tc.artifactType)
					}
					mustCLI(t, src, oras, args...)
					out := filepath.Join(work, "pull-"+tc.tag)
					mustRun(t, ExitOK, "", "pull", "-o", out, ref)
					sameFile(t, catalogFile, filepath.Join(out, "catalog.yaml"))
				}
				// And refuses what is not ours, naming what it found.
				ref := reg.Host + "/interop/foreign:v1"
				mustCLI(t, src, oras, "push", "--plain-http", "--artifact-type", "application/vnd.example.other", ref, "catalog.yaml")
				code, _, stderr := run(t, "", "pull", "-o", filepath.Join(work, "foreign"), ref)
				if code != ExitFailure || !strings.Contains(stderr, `"application/vnd.example.other"`) {
					t.Errorf("pull of a foreign artifact: exit %d, %s", code, stderr)
				}
			})
			t.Run("cosign verifies what sign wrote", func(t *testing.T) {
				for _, format := range []string{"legacy", "bundle"} {
					ref := reg.Host + "/interop/signed-" + format + ":v1"
					digest := strings.TrimSpace(mustRun(t, ExitOK, "", "push", ref, catalogFile))
					mustRun(t, ExitOK, "", "sign", "--key", key, "--signature-format", format, ref)
					pinned := reg.Host + "/interop/signed-" + format + "@" + digest
					verifiers := [][]string{{cosign3}}
					if format == "legacy" {
						verifiers = append(verifiers, []string{cosign2}) // cosign v2 reads bundles only with a trusted root
					}
					for _, v := range verifiers {
						mustCLI(t, work, v[0], "verify", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", pinned)
						if out, ok := cli(t, work, v[0], "verify", "--key", otherPub, "--insecure-ignore-tlog", "--allow-http-registry", pinned); ok {
							t.Errorf("%s verify accepted the %s signature with another key:\n%s", filepath.Base(v[0]), format, out)
						}
					}
				}
			})
			t.Run("verify accepts what cosign signed", func(t *testing.T) {
				// A catalog naming no artifacts: only its own signature is checked.
				small := writeTestFile(t, work, "small.yaml", "apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata:\n  name: small\nspec:\n  krmFunctions: []\n", 0o644)
				for _, tc := range []struct {
					name, bin string
					args      []string
					format    string
				}{
					{"v2", cosign2, []string{"--tlog-upload=false"}, "cosign-legacy"},
					{"v3", cosign3, []string{"--use-signing-config=false", "--tlog-upload=false"}, "sigstore-bundle"},
				} {
					ref := reg.Host + "/interop/cosign-" + tc.name + ":v1"
					digest := strings.TrimSpace(mustRun(t, ExitOK, "", "push", ref, small))
					pinned := reg.Host + "/interop/cosign-" + tc.name + "@" + digest
					args := append([]string{"sign", "--key", key, "--allow-http-registry", "-y"}, tc.args...)
					mustCLI(t, work, tc.bin, append(args, pinned)...)

					mustRun(t, ExitOK, "", "verify", "--key", pub, "--require-signatures", "oci://"+ref)
					mustRun(t, ExitFailure, "", "verify", "--key", otherPub, "--require-signatures", "oci://"+ref)
					mustRun(t, ExitOK, "", "pull", "--key", pub, "-o", filepath.Join(work, "cosign-"+tc.name), ref)
					discovered := mustRun(t, ExitOK, "", "discover", "--key", pub, pinned)
					if !strings.Contains(discovered, tc.format+"  verified by "+pub) {
						t.Errorf("discover after cosign %s sign:\n%s", tc.name, discovered)
					}
				}
			})
		})
	}
}

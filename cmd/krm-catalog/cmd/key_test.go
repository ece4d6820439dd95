package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

// key generate writes a private key only its owner reads and a public key, keeps existing files
// unless --force, and the pair signs and verifies with krm-catalog's own sign and pull --key.
func TestKeyGenerate(t *testing.T) {
	dir := ociEnv(t) // COSIGN_PASSWORD set
	prefix := filepath.Join(dir, "team")
	var got struct{ PrivateKey, PublicKey, ID string }
	if err := json.Unmarshal([]byte(mustRun(t, ExitOK, "", "key", "generate", "--output-key-prefix", prefix, "--format", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{prefix + ".key", prefix + ".pub"}, []string{got.PrivateKey, got.PublicKey}); diff != "" || len(got.ID) != 64 {
		t.Errorf("json (-want +got):\n%s id %q", diff, got.ID)
	}
	modes := map[string]os.FileMode{".key": 0o600, ".pub": 0o644}
	for ext, want := range modes {
		fi, err := os.Stat(prefix + ext)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", ext, fi.Mode().Perm(), want)
		}
	}
	priv, _ := os.ReadFile(prefix + ".key")
	if !strings.HasPrefix(string(priv), "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----") {
		t.Errorf("private key file starts %q", strings.SplitN(string(priv), "\n", 2)[0])
	}

	code, _, stderr := run(t, "", "key", "generate", "--output-key-prefix", prefix)
	if code != ExitUsage || !strings.Contains(stderr, "--force") {
		t.Errorf("over existing files: exit %d, %s; want %d naming --force", code, stderr, ExitUsage)
	}
	if again, _ := os.ReadFile(prefix + ".key"); string(again) != string(priv) {
		t.Error("the existing key was replaced without --force")
	}
	mustRun(t, ExitOK, "", "key", "generate", "--output-key-prefix", prefix, "--force")
	if again, _ := os.ReadFile(prefix + ".key"); string(again) == string(priv) {
		t.Error("--force kept the old key")
	}

	t.Setenv("COSIGN_PASSWORD", "")
	os.Unsetenv("COSIGN_PASSWORD")
	code, _, stderr = run(t, "", "key", "generate", "--output-key-prefix", filepath.Join(dir, "nopw"))
	if code != ExitUsage || !strings.Contains(stderr, "COSIGN_PASSWORD") {
		t.Errorf("without COSIGN_PASSWORD or a terminal: exit %d, %s", code, stderr)
	}
	t.Setenv("COSIGN_PASSWORD", "s3cret")
	mustRun(t, ExitOK, "", "key", "generate", "--output-key-prefix", prefix, "--force")

	reg := registrytest.Distribution(t)
	ref := reg.Host + "/catalogs/keyed:v1"
	mustRun(t, ExitOK, "", "push", ref, "../../../catalog/testdata/reference/catalog.yaml")
	mustRun(t, ExitOK, "", "sign", "--key", prefix+".key", ref)
	mustRun(t, ExitOK, "", "pull", "--key", prefix+".pub", "-o", filepath.Join(dir, "pulled"), ref)
	mustRun(t, ExitOK, "", "sign", "--key", prefix+".key", "--signature-format", "bundle", ref)
}

// cosign v2 and v3 sign and verify blobs with a pair key generate wrote.
func TestKeyGenerateCosignInterop(t *testing.T) {
	cosigns := map[string][]string{
		"cosign-v2": {"--tlog-upload=false"},
		"cosign-v3": {"--use-signing-config=false", "--tlog-upload=false"},
	}
	dir := ociEnv(t)
	mustRun(t, ExitOK, "", "key", "generate", "--output-key-prefix", filepath.Join(dir, "cosign"))
	blob := writeTestFile(t, dir, "blob.txt", "what is signed\n", 0o644)
	other := writeTestFile(t, dir, "other.txt", "what is not\n", 0o644)
	for name, signFlags := range cosigns {
		t.Run(name, func(t *testing.T) {
			bin := tool(t, name)
			bundle := filepath.Join(dir, name+".bundle")
			mustCLI(t, dir, bin, append([]string{"sign-blob", "--yes", "--key", "cosign.key", "--bundle", bundle}, append(signFlags, blob)...)...)
			mustCLI(t, dir, bin, "verify-blob", "--key", "cosign.pub", "--bundle", bundle, "--insecure-ignore-tlog=true", blob)
			if out, ok := cli(t, dir, bin, "verify-blob", "--key", "cosign.pub", "--bundle", bundle, "--insecure-ignore-tlog=true", other); ok {
				t.Errorf("verify-blob accepted another file:\n%s", out)
			}
		})
	}
}

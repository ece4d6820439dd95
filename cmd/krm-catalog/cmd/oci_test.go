package cmd

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// ociEnv points the cache, the docker config and the key password at test-owned places, and
// fixes SOURCE_DATE_EPOCH. Tests that call it cannot run in parallel (the environment is shared).
func ociEnv(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("DOCKER_CONFIG", filepath.Join(dir, "docker"))
	t.Setenv("COSIGN_PASSWORD", signtest.Password)
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	return dir
}

func writeTestFile(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// mustRun runs a command that must exit with want and returns its standard output.
func mustRun(t *testing.T, want int, stdin string, args ...string) string {
	t.Helper()
	code, stdout, stderr := run(t, stdin, args...)
	if code != want {
		t.Fatalf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	return stdout
}

func TestPushPullCommands(t *testing.T) {
	dir := ociEnv(t)
	for _, reg := range registrytest.Both(t) {
		t.Run(reg.Name, func(t *testing.T) {
			ref := reg.Host + "/catalogs/example:v1.0.0"
			digest := strings.TrimSpace(mustRun(t, ExitOK, "", "push", ref, "../../../catalog/testdata/reference/catalog.yaml"))
			if !strings.HasPrefix(digest, "sha256:") || len(digest) != 71 {
				t.Fatalf("push printed %q, want a digest", digest)
			}
			// SOURCE_DATE_EPOCH makes the digest reproducible.
			var pushed pushJSON
			if err := json.Unmarshal([]byte(mustRun(t, ExitOK, "", "push", "--format", "json", reg.Host+"/catalogs/example-again:v1.0.0", "../../../catalog/testdata/reference/catalog.yaml")), &pushed); err != nil {
				t.Fatal(err)
			}
			if pushed.Digest != digest || pushed.Kind != "catalog" || pushed.ArtifactType != "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml" {
				t.Errorf("second push %+v, want digest %s of a catalog", pushed, digest)
			}

			out := filepath.Join(dir, reg.Name, "out")
			var pulled pullJSON
			if err := json.Unmarshal([]byte(mustRun(t, ExitOK, "", "pull", "--format", "json", "-o", out, ref)), &pulled); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile("../../../catalog/testdata/reference/catalog.yaml")
			got, _ := os.ReadFile(filepath.Join(out, "catalog.yaml"))
			if diff := cmp.Diff(string(want), string(got)); diff != "" || pulled.Digest != digest {
				t.Errorf("pulled %s (want %s), content (-want +got):\n%s", pulled.Digest, digest, diff)
			}
			// By digest, the second time, from the cache.
			if err := json.Unmarshal([]byte(mustRun(t, ExitOK, "", "pull", "--format", "json", "-o", out, reg.Host+"/catalogs/example@"+digest)), &pulled); err != nil {
				t.Fatal(err)
			}
			if !pulled.Cached {
				t.Error("a pull by digest of cached content was not served from the cache")
			}

			// Exec: an index, the platform picked, the bit restored.
			bin := filepath.Join(dir, "fn-bin")
			writeTestFile(t, dir, "fn-bin", "#!/bin/sh\necho hi\n", 0o755)
			execRef := reg.Host + "/fns/hello-exec:v1"
			mustRun(t, ExitOK, "", "push", "--type", "exec", "--platform", "linux/arm64="+bin, "--platform", runtime.GOOS+"/"+runtime.GOARCH+"="+bin, execRef)
			execOut := filepath.Join(dir, reg.Name, "exec")
			stdout := mustRun(t, ExitOK, "", "pull", "-o", execOut, execRef)
			if strings.TrimSpace(stdout) != filepath.Join(execOut, "fn-bin") {
				t.Errorf("pull printed %q", stdout)
			}
			if fi, err := os.Stat(filepath.Join(execOut, "fn-bin")); err != nil || fi.Mode().Perm()&0o111 == 0 {
				t.Errorf("exec binary not executable: %v %v", fi, err)
			}
			_, _, stderr := run(t, "", "pull", "--platform", "windows/arm64", "-o", execOut, execRef)
			if !strings.Contains(stderr, "no binary for the platform windows/arm64") {
				t.Errorf("missing platform: %s", stderr)
			}
		})
	}
}

func TestPushPullRefusals(t *testing.T) {
	dir := ociEnv(t)
	reg := registrytest.Distribution(t)
	bin := writeTestFile(t, dir, "bin", "x", 0o755)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"invalid catalog is not pushed", []string{"push", reg.Host + "/bad:v1", "../../../catalog/testdata/invalid/16-semver-tag-without-sha256.yaml"}, ExitFailure, "does not validate; not pushed"},
		{"so it is not there", []string{"pull", "-o", dir, reg.Host + "/bad:v1"}, ExitFailure, "not found"},
		{"a ResourceList is not an artifact", []string{"push", reg.Host + "/rl:v1", "../../../catalog/testdata/valid/12-resource-list.yaml"}, ExitUsage, "is a ResourceList"},
		{"exec without platforms", []string{"push", "--type", "exec", reg.Host + "/x:v1", bin}, ExitUsage, "--platform os/arch=PATH"},
		{"platforms without exec", []string{"push", "--platform", "linux/amd64=" + bin, reg.Host + "/x:v1", "../../../catalog/testdata/reference/catalog.yaml"}, ExitUsage, "--platform is for --type exec"},
		{"bad platform", []string{"push", "--type", "exec", "--platform", "linux=" + bin, reg.Host + "/x:v1"}, ExitUsage, "expected os/arch"},
		{"unknown type", []string{"push", "--type", "wasm", reg.Host + "/x:v1", bin}, ExitUsage, "unknown artifact type"},
		{"no registry host", []string{"push", "catalog:v1", "../../../catalog/testdata/reference/catalog.yaml"}, ExitUsage, "invalid reference"},
		{"bad format", []string{"pull", "--format", "xml", reg.Host + "/x:v1"}, ExitUsage, "--format must be text or json"},
		{"sign without key", []string{"sign", reg.Host + "/x:v1"}, ExitUsage, "--key is required"},
		{"attach by tag", []string{"attach", "--definition", "../../../examples/definition.yaml", reg.Host + "/x:v1"}, ExitUsage, "needs the image by digest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, "", tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.wantCode, tc.wantStderr)
			}
		})
	}
}

func TestSignAttachDiscoverCommands(t *testing.T) {
	dir := ociEnv(t)
	trusted := signtest.KeyPair(t, "trusted")
	stranger := signtest.KeyPair(t, "stranger")
	key := writeTestFile(t, dir, "cosign.key", string(trusted.PrivatePEM), 0o600)
	pub := writeTestFile(t, dir, "cosign.pub", string(trusted.PublicPEM), 0o644)
	otherPub := writeTestFile(t, dir, "other.pub", string(stranger.PublicPEM), 0o644)
	for _, reg := range registrytest.Both(t) {
		t.Run(reg.Name, func(t *testing.T) {
			image := reg.Host + "/fns/set-labels"
			d := registrytest.PushImage(t, image+":v1.1.0", "")
			pinned := image + "@" + d.String()

			mustRun(t, ExitOK, "", "attach", "--definition", "../../../examples/definition.yaml", pinned)
			mustRun(t, ExitOK, "", "sign", "--key", key, pinned)
			mustRun(t, ExitOK, "", "sign", "--key", key, "--signature-format", "bundle", pinned)

			text := mustRun(t, ExitOK, "", "discover", "--key", pub, image+":v1.1.0")
			for _, want := range []string{"definition  sha256:", "definition.yaml", "cosign-legacy  verified by " + pub, "sigstore-bundle  verified by " + pub} {
				if !strings.Contains(text, want) {
					t.Errorf("discover output lacks %q:\n%s", want, text)
				}
			}
			var d2 discoverJSON
			if err := json.Unmarshal([]byte(mustRun(t, ExitOK, "", "discover", "--format", "json", "--key", otherPub, pinned)), &d2); err != nil {
				t.Fatal(err)
			}
			if len(d2.Definitions) != 1 || len(d2.Signatures) != 2 || d2.Signatures[0].Verified || d2.Signatures[1].Verified {
				t.Errorf("discover with the wrong key: %+v", d2)
			}

			// pull checks signatures before writing: a catalog signed with the trusted key only.
			cat := reg.Host + "/catalogs/signed:v1"
			mustRun(t, ExitOK, "", "push", cat, "../../../catalog/testdata/reference/catalog.yaml")
			_, _, stderr := run(t, "", "pull", "--key", pub, "-o", filepath.Join(dir, "unsigned"), cat)
			if !strings.Contains(stderr, "no signature for") {
				t.Errorf("pull of an unsigned artifact with --key: %s", stderr)
			}
			mustRun(t, ExitOK, "", "sign", "--key", key, cat)
			mustRun(t, ExitOK, "", "pull", "--key", pub, "-o", filepath.Join(dir, "signed"), cat)
			code, _, stderr := run(t, "", "pull", "--key", otherPub, "-o", filepath.Join(dir, "wrong"), cat)
			if code != ExitFailure || !strings.Contains(stderr, "no signature by a trusted key") {
				t.Errorf("pull with the wrong key: exit %d, %s", code, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "wrong", "catalog.yaml")); err == nil {
				t.Error("a pull whose signature did not verify wrote the file")
			}
		})
	}
	t.Setenv("COSIGN_PASSWORD", "wrong")
	code, _, stderr := run(t, "", "sign", "--key", key, "127.0.0.1:1/x:v1")
	if code != ExitUsage || !strings.Contains(stderr, "COSIGN_PASSWORD") {
		t.Errorf("sign with a wrong password: exit %d, %s", code, stderr)
	}
}

func TestLoginLogoutCommands(t *testing.T) {
	dir := ociEnv(t)
	reg := registrytest.DistributionWithAuth(t, "ci", "s3cret")
	ref := reg.Host + "/private/catalog:v1"
	if code, _, stderr := run(t, "", "push", ref, "../../../catalog/testdata/reference/catalog.yaml"); code != ExitFailure || !strings.Contains(stderr, "credential") {
		t.Errorf("anonymous push: exit %d, %s", code, stderr)
	}
	if code, _, _ := run(t, "wrong\n", "login", "-u", "ci", "--password-stdin", reg.Host); code != ExitFailure {
		t.Errorf("login with a wrong password: exit %d", code)
	}
	if code, _, stderr := run(t, "", "login", "-u", "ci", reg.Host); code != ExitUsage || !strings.Contains(stderr, "--password-stdin") {
		t.Errorf("login without --password-stdin: exit %d, %s", code, stderr)
	}
	mustRun(t, ExitOK, "s3cret\n", "login", "-u", "ci", "--password-stdin", reg.Host)
	cfg, err := os.ReadFile(filepath.Join(dir, "docker", "config.json"))
	if err != nil || !strings.Contains(string(cfg), reg.Host) {
		t.Fatalf("docker config after login: %s %v", cfg, err)
	}
	mustRun(t, ExitOK, "", "push", ref, "../../../catalog/testdata/reference/catalog.yaml")
	mustRun(t, ExitOK, "", "logout", reg.Host)
	if code, _, _ := run(t, "", "pull", "-o", dir, ref); code != ExitFailure {
		t.Errorf("pull after logout: exit %d, want a failure", code)
	}
}

func TestVerifyCommand(t *testing.T) {
	dir := ociEnv(t)
	reg := registrytest.Distribution(t)
	bin := writeTestFile(t, dir, "bin", "binary", 0o755)
	execRef := reg.Host + "/fns/e:v1"
	mustRun(t, ExitOK, "", "push", "--type", "exec", "--platform", "linux/amd64="+bin, execRef)
	catalogDoc := func(sha string) string { return execCatalog(execRef, sha) }
	good := writeTestFile(t, dir, "good.yaml", catalogDoc("9a3a45d01531a20e89ac6ae10b0b0beb0492acd7216a368aa062d1a5fecaf9cd"), 0o644)
	bad := writeTestFile(t, dir, "bad.yaml", catalogDoc(strings.Repeat("a", 64)), 0o644)
	pub := writeTestFile(t, dir, "cosign.pub", string(signtest.KeyPair(t, "k").PublicPEM), 0o644)

	mustRun(t, ExitOK, "", "verify", good)
	mustRun(t, ExitOK, "", "verify", "--offline", "../../../examples")
	text := mustRun(t, ExitFailure, "", "verify", bad)
	if !strings.Contains(text, "bad.yaml:21:19: error: the document records sha256 aaaa") {
		t.Errorf("text report:\n%s", text)
	}
	mustRun(t, ExitFailure, "", "verify", "--key", pub, "--require-signatures", good)
	mustRun(t, ExitOK, "", "verify", "--key", pub, good) // a missing signature is a warning

	// The results report is a ResourceList that validate accepts.
	results := mustRun(t, ExitFailure, "", "verify", "--format", "results", bad)
	if !strings.Contains(results, "kind: ResourceList") || !strings.Contains(results, "severity: error") {
		t.Errorf("results report:\n%s", results)
	}
	mustRun(t, ExitOK, results, "validate", "--strict", "-")

	var junit struct {
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal([]byte(mustRun(t, ExitFailure, "", "verify", "--format", "junit", bad)), &junit); err != nil || junit.Failures != 1 {
		t.Errorf("junit: %d failures, %v", junit.Failures, err)
	}
	var report struct {
		Summary struct{ Errors, Artifacts int }
	}
	if err := json.Unmarshal([]byte(mustRun(t, ExitFailure, "", "verify", "--format", "json", bad)), &report); err != nil || report.Summary.Errors != 1 || report.Summary.Artifacts != 1 {
		t.Errorf("json summary %+v, %v", report.Summary, err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--require-signatures", good}, "at least one trusted key"},
		{[]string{"verify", "--format", "xml", good}, "--format must be one of"},
		{[]string{"verify", "missing.yaml"}, "missing.yaml"},
		{[]string{"verify", "http://catalogs.invalid/catalog.yaml"}, "plain http is refused beyond this machine"},
		{[]string{"verify", "--key", "missing.pub", good}, "missing.pub"},
	} {
		if code, _, stderr := run(t, "", tc.args...); code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// execCatalog is a catalog of one function whose exec binary for linux/amd64 is the artifact ref,
// holding a file of that sha256.
func execCatalog(ref, sha string) string {
	return `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: verify-test
spec:
  krmFunctions:
    - group: fn.example.com
      names:
        kind: Echo
      description: Echoes.
      publisher: example.com
      versions:
        - name: v1
          runtime:
            exec:
              platforms:
                - bin: bin
                  os: linux
                  arch: amd64
                  uri: oci://` + ref + `
                  sha256: ` + sha + `
`
}

// Every command that talks to registries gives up on one that accepts connections and never
// answers, saying which registry timed out, with exit status 1.
func TestRegistryCommandsTimeOut(t *testing.T) {
	dir := ociEnv(t)
	host := registrytest.Silent(t)
	keys := signtest.KeyPair(t, "k")
	key := writeTestFile(t, dir, "cosign.key", string(keys.PrivatePEM), 0o600)
	ref := host + "/catalogs/x:v1"
	bound := []string{"--registry-timeout", "100ms"}
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
	}{
		{"push", "", []string{"push", ref, "../../../catalog/testdata/reference/catalog.yaml"}, ExitFailure},
		{"pull", "", []string{"pull", "-o", filepath.Join(dir, "out"), ref}, ExitFailure},
		{"sign", "", []string{"sign", "--key", key, ref}, ExitFailure},
		{"discover", "", []string{"discover", ref}, ExitFailure},
		// verify's input could not be read: 2, as for a missing file.
		{"verify", "", []string{"verify", "oci://" + ref}, ExitUsage},
		{"login", "secret\n", []string{"login", "-u", "ci", "--password-stdin", host}, ExitFailure},
		// mirror's source could not be read: 2, as for a missing file.
		{"mirror", "", []string{"mirror", "oci://" + ref, host + "/mirror"}, ExitUsage},
		// resolve's catalog could not be read: 2, as for verify and mirror.
		{"resolve from an oci:// catalog", "", []string{"resolve", "--catalog", "oci://" + ref, "--trusted-catalog", "oci://" + ref, "example.com/v1", "SetNamespace"}, ExitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.stdin, append(tc.args, bound...)...)
			if code != tc.code || !strings.Contains(stderr, "registry "+host+" timed out") {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and registry %s timed out", code, stdout, stderr, tc.code, host)
			}
		})
	}
}

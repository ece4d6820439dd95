package cmd

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

func sumOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// an existing catalog a person wrote: its comments, its order and its other entries must stay
const addExisting = `# the platform team's catalog
apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: platform # keep me
spec:
  krmFunctions:
    # first function
    - group: fn.example.com
      names:
        kind: SetNamespace
      description: old
      publisher: example.com
      versions:
        - name: v1
          runtime:
            exec:
              platforms:
                - bin: set-namespace # the binary
                  os: linux
                  arch: amd64
                  uri: https://old.example.com/x
                  sha256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
                - bin: set-namespace
                  os: windows
                  arch: amd64
                  uri: https://old.example.com/y
                  sha256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
`

func TestCatalogAdd(t *testing.T) {
	dir := ociEnv(t)
	reg := registrytest.Distribution(t)
	files := map[string]string{"fn_linux_amd64": "linux binary", "fn_darwin_arm64": "darwin binary", "s.star": "print(1)\n", "dup/fn_linux_amd64": "other"}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, dir, name, content, 0o644)
	}
	// an image in a real registry: its digest is what catalog add must ask for
	imageDigest := strings.TrimSpace(mustRun(t, ExitOK, "", "push", "--type", "starlark", reg.Host+"/fns/set-namespace:v1.0.0", filepath.Join(dir, "s.star")))
	p := func(name string) string { return filepath.Join(dir, name) }
	with := func(head []string, more ...string) []string { return append(append([]string(nil), head...), more...) }
	fn := []string{"--group", "fn.example.com", "--kind", "SetNamespace", "--version", "v1"}
	newFn := with(fn, "--description", "Sets the namespace", "--publisher", "example.com")
	base := "https://functions.example.com/set-namespace/v1.0.0"

	for _, tc := range []struct {
		name     string
		existing string // "" for no file
		args     []string
		code     int
		stderr   string
		// what the written catalog must hold: a function's version's runtime, and lines of the file
		runtime catalog.Runtime
		lines   []string
	}{
		{
			name: "new file, executables",
			args: with(newFn, "--exec", "linux/amd64="+p("fn_linux_amd64"), "--exec", "darwin/arm64="+p("fn_darwin_arm64"), "--base-url", base+"/", "--bin", "set-namespace"),
			code: ExitOK, stderr: "added the function fn.example.com/v1 SetNamespace (exec linux/amd64, darwin/arm64)",
			runtime: catalog.Runtime{Exec: &catalog.ExecRuntime{Platforms: []catalog.ExecPlatform{
				{Bin: "set-namespace", OS: "linux", Arch: "amd64", URI: base + "/fn_linux_amd64", SHA256: sumOf("linux binary")},
				{Bin: "set-namespace", OS: "darwin", Arch: "arm64", URI: base + "/fn_darwin_arm64", SHA256: sumOf("darwin binary")},
			}}},
			lines: []string{"  name: catalog\n", "  krmFunctions:\n  - group: fn.example.com\n"},
		},
		{
			name:     "existing file: one platform replaced, the other kept, comments kept",
			existing: addExisting,
			args:     with(fn, "--exec", "linux/amd64="+p("fn_linux_amd64"), "--base-url", base),
			code:     ExitOK, stderr: "updated fn.example.com/v1 SetNamespace (exec linux/amd64)",
			runtime: catalog.Runtime{Exec: &catalog.ExecRuntime{Platforms: []catalog.ExecPlatform{
				{Bin: "fn_linux_amd64", OS: "linux", Arch: "amd64", URI: base + "/fn_linux_amd64", SHA256: sumOf("linux binary")},
				{Bin: "set-namespace", OS: "windows", Arch: "amd64", URI: "https://old.example.com/y", SHA256: strings.Repeat("a", 64)},
			}}},
			lines: []string{"# the platform team's catalog\n", "  name: platform # keep me\n", "    # first function\n", "                - bin: fn_linux_amd64 # the binary\n"},
		},
		{
			name:     "image by tag: the registry's digest",
			existing: addExisting,
			args:     with(fn, "--image", reg.Host+"/fns/set-namespace:v1.0.0"),
			code:     ExitOK, stderr: "(container " + reg.Host + "/fns/set-namespace:v1.0.0@" + imageDigest + ")",
			runtime: catalog.Runtime{
				Container: &catalog.ContainerRuntime{Image: reg.Host + "/fns/set-namespace:v1.0.0", SHA256: strings.TrimPrefix(imageDigest, "sha256:")},
				Exec: &catalog.ExecRuntime{Platforms: []catalog.ExecPlatform{
					{Bin: "set-namespace", OS: "linux", Arch: "amd64", URI: "https://old.example.com/x", SHA256: strings.Repeat("a", 64)},
					{Bin: "set-namespace", OS: "windows", Arch: "amd64", URI: "https://old.example.com/y", SHA256: strings.Repeat("a", 64)},
				}},
			},
		},
		{
			name:     "image by digest: no registry asked; a new version",
			existing: addExisting,
			args:     []string{"--group", "fn.example.com", "--kind", "SetNamespace", "--version", "v2", "--image", "registry.example.com/fns/set-namespace:v2.0.0@sha256:" + strings.Repeat("b", 64)},
			code:     ExitOK, stderr: "added fn.example.com/v2 SetNamespace",
			runtime: catalog.Runtime{Container: &catalog.ContainerRuntime{Image: "registry.example.com/fns/set-namespace:v2.0.0", SHA256: strings.Repeat("b", 64)}},
		},
		{
			name: "starlark",
			args: with(newFn, "--starlark", p("s.star"), "--uri", "oci://registry.example.com/fns/s:v1"),
			code: ExitOK, stderr: "(starlark oci://registry.example.com/fns/s:v1)",
			runtime: catalog.Runtime{Starlark: &catalog.StarlarkRuntime{URI: "oci://registry.example.com/fns/s:v1", SHA256: sumOf("print(1)\n")}},
		},
		{name: "unknown tag", args: with(newFn, "--image", reg.Host+"/fns/set-namespace:v9"), code: ExitFailure, stderr: "no such tag"},
		{name: "new function without description", args: with(fn, "--image", "registry.example.com/x:v1@sha256:"+strings.Repeat("b", 64)), code: ExitUsage, stderr: "give --description and --publisher"},
		{name: "exec without base", args: with(newFn, "--exec", "linux/amd64="+p("fn_linux_amd64")), code: ExitUsage, stderr: "--exec needs --base-url"},
		{name: "exec spelled wrong", args: with(newFn, "--exec", "linux="+p("fn_linux_amd64"), "--base-url", base), code: ExitUsage, stderr: "want OS/ARCH=PATH"},
		{name: "missing executable", args: with(newFn, "--exec", "linux/amd64="+p("nothing"), "--base-url", base), code: ExitUsage, stderr: "nothing"},
		{name: "two platforms, one name", args: with(newFn, "--exec", "linux/amd64="+p("fn_linux_amd64"), "--exec", "linux/arm64="+p("dup/fn_linux_amd64"), "--base-url", base), code: ExitUsage, stderr: "both be published as"},
		{name: "invalid: plain http", existing: addExisting, args: with(fn, "--exec", "linux/amd64="+p("fn_linux_amd64"), "--base-url", "http://functions.example.com"), code: ExitFailure, stderr: "would not validate"},
		{name: "invalid: unknown os", existing: addExisting, args: with(fn, "--exec", "plan9/amd64="+p("fn_linux_amd64"), "--base-url", base), code: ExitFailure, stderr: "would not validate"},
		{name: "two documents", existing: addExisting + "---\n" + addExisting, args: with(fn, "--image", "registry.example.com/x:v1@sha256:"+strings.Repeat("b", 64)), code: ExitUsage, stderr: "holds 2 documents"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "catalog.yaml")
			if tc.existing != "" {
				writeTestFile(t, filepath.Dir(file), "catalog.yaml", tc.existing, 0o644)
			}
			code, _, stderr := run(t, "", append([]string{"catalog", "add", file}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d; standard error does not say %q:\n%s", code, tc.code, tc.stderr, stderr)
			}
			data, err := os.ReadFile(file)
			if tc.code != ExitOK {
				if string(data) != tc.existing {
					t.Errorf("the file was written:\n%s", data)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v, err := catalog.NewValidator()
			if err != nil {
				t.Fatal(err)
			}
			docs, findings := v.Validate(file, data, catalog.Options{})
			if findings.HasErrors() {
				t.Fatalf("the written catalog does not validate: %v\n%s", findings, data)
			}
			cat, err := catalog.DecodeCatalog(docs[0])
			if err != nil {
				t.Fatal(err)
			}
			var got *catalog.Runtime
			for _, f := range cat.Functions {
				for _, ver := range f.Versions {
					if f.ID() == "fn.example.com/SetNamespace" && f.APIVersion(ver) == "fn.example.com/"+tc.args[5] {
						got = &ver.Runtime
					}
				}
			}
			if got == nil {
				t.Fatalf("no version %s in:\n%s", tc.args[5], data)
			}
			if diff := cmp.Diff(tc.runtime, *got); diff != "" {
				t.Errorf("runtime (-want +got):\n%s", diff)
			}
			for _, l := range tc.lines {
				if !strings.Contains(string(data), l) {
					t.Errorf("the file does not hold %q:\n%s", l, data)
				}
			}
		})
	}
}

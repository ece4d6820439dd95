package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// kptMetadataAt copies the kpt metadata test data to a directory of its own, with every image in
// the registry host, and returns it.
func kptMetadataAt(t *testing.T, host string) string {
	t.Helper()
	dir := t.TempDir()
	image := regexp.MustCompile(`(?m)^image: \S+/(\S+)`)
	err := filepath.WalkDir("testdata/kpt-metadata", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "metadata.yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		to := filepath.Join(dir, filepath.Base(filepath.Dir(path)), "metadata.yaml")
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, image.ReplaceAll(data, []byte("image: "+host+"/kpt-fn/$1")), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCatalogImport imports kpt's metadata.yaml files against a registry on 127.0.0.1: every
// image is pinned to the digest `oras resolve` reports for its tag, the catalog validates, a
// hidden function is left out unless asked, an image without the tag is an error naming it, and
// --offline writes unpinned images with a warning.
func TestCatalogImport(t *testing.T) {
	ociEnv(t)
	oras := tool(t, "oras")
	reg := registrytest.Distribution(t)
	dir := kptMetadataAt(t, reg.Host)
	for i, fn := range []string{"set-namespace", "set-labels", "starlark", "format"} {
		registrytest.PushImage(t, reg.Host+"/kpt-fn/"+fn+":v0.4", fn)
		registrytest.PushImage(t, reg.Host+"/kpt-fn/"+fn+":v0.5", fn+strings.Repeat("x", i+1))
	}

	out := mustRun(t, ExitOK, "", "catalog", "import", "--kpt-metadata", dir, "--tag", "v0.4", "--name", "kpt-functions")
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	docs, findings := v.Validate("catalog.yaml", []byte(out), catalog.Options{})
	if findings.HasErrors() || len(docs) != 1 {
		t.Fatalf("the catalog does not validate: %v\n%s", findings, out)
	}
	cat, err := catalog.DecodeCatalog(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	type entry struct{ ID, Image, Home, License, Description string }
	var got []entry
	for _, f := range cat.Functions {
		got = append(got, entry{f.ID(), f.Versions[0].Runtime.Container.Image, f.Home, f.Versions[0].License, f.Description})
	}
	var want []entry
	for _, fn := range []string{"set-labels", "set-namespace", "starlark"} {
		ref := reg.Host + "/kpt-fn/" + fn + ":v0.4"
		dgst := strings.TrimSpace(mustCLI(t, t.TempDir(), oras, "resolve", "--plain-http", ref))
		want = append(want, entry{"fn.kpt.dev/" + catalog.KptKind(fn), ref + "@" + dgst,
			"https://github.com/kptdev/krm-functions-catalog/tree/master/functions/go/" + fn, "Apache-2.0", ""})
	}
	for i := range got {
		got[i].Description = "" // compared below
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("imported functions (-want +got):\n%s\n%s", diff, out)
	}
	if f := cat.Functions[1]; f.Description != "Update namespace." || strings.Join(f.Tags, ",") != "mutator" || len(f.Versions[0].Examples) != 3 || f.Publisher != "kpt.dev" {
		t.Errorf("SetNamespace: %+v", f)
	}

	withHidden := mustRun(t, ExitOK, "", "catalog", "import", "--kpt-metadata", dir, "--tag", "v0.5", "--name", "kpt-functions", "--include-hidden")
	if !strings.Contains(withHidden, "kind: Format") || !strings.Contains(withHidden, reg.Host+"/kpt-fn/format:v0.5@sha256:") {
		t.Errorf("--include-hidden:\n%s", withHidden)
	}

	code, _, stderr := run(t, "", "catalog", "import", "--kpt-metadata", dir, "--tag", "v9", "--name", "kpt-functions")
	if code != ExitFailure || !strings.Contains(stderr, reg.Host+"/kpt-fn/set-namespace:v9") {
		t.Errorf("a tag that does not resolve: exit %d\n%s", code, stderr)
	}
	code, offline, stderr := run(t, "", "catalog", "import", "--kpt-metadata", dir, "--tag", "v9", "--name", "kpt-functions", "--offline")
	if code != ExitOK || strings.Contains(offline, "@sha256:") || !strings.Contains(offline, "image: "+reg.Host+"/kpt-fn/starlark:v9") ||
		!strings.Contains(stderr, "warning: starlark: "+reg.Host+"/kpt-fn/starlark:v9 left unpinned") {
		t.Errorf("--offline: exit %d\n%s\n%s", code, offline, stderr)
	}
}

// TestCatalogImportPushAndSign imports, pushes and signs in one step against a registry on
// 127.0.0.1: the pushed catalog is the written one, and verify accepts its signature by the key
// and refuses it for another; --sign-key without --push, and --push with --offline, are usage
// errors.
func TestCatalogImportPushAndSign(t *testing.T) {
	tmp := ociEnv(t)
	reg := registrytest.Distribution(t)
	dir := kptMetadataAt(t, reg.Host)
	keys := signtest.KeyPair(t, "k")
	key := writeTestFile(t, tmp, "cosign.key", string(keys.PrivatePEM), 0o600)
	for _, fn := range []string{"set-namespace", "set-labels", "starlark"} {
		dgst := registrytest.PushImage(t, reg.Host+"/kpt-fn/"+fn+":v0.4", fn)
		// the images signed too, so that verify --require-signatures judges the catalog's own
		mustRun(t, ExitOK, "", "sign", "--key", key, reg.Host+"/kpt-fn/"+fn+"@"+dgst.String())
	}
	pub := writeTestFile(t, tmp, "cosign.pub", string(keys.PublicPEM), 0o644)
	other := writeTestFile(t, tmp, "other.pub", string(signtest.KeyPair(t, "other").PublicPEM), 0o644)
	written := filepath.Join(tmp, "kpt-functions.yaml")
	ref := reg.Host + "/catalogs/kpt-functions:v0.4"
	importArgs := []string{"catalog", "import", "--kpt-metadata", dir, "--tag", "v0.4", "--name", "kpt-functions"}

	code, stdout, stderr := run(t, "", append(importArgs, "-o", written, "--push", "oci://"+ref, "--sign-key", key)...)
	if code != ExitOK || !regexp.MustCompile(`^sha256:[0-9a-f]{64}\n$`).MatchString(stdout) || !strings.Contains(stderr, "signed "+reg.Host+"/catalogs/kpt-functions@sha256:") {
		t.Fatalf("import --push --sign-key: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// the catalog verify reads from the registry is the one written, signed by the key
	out := mustRun(t, ExitOK, "", "catalog", "diff", "--key", pub, "oci://"+ref, written)
	if !strings.Contains(out, "no changes") {
		t.Errorf("the pushed catalog differs from the written one:\n%s", out)
	}
	mustRun(t, ExitOK, "", "catalog", "diff", "--key", pub, "oci://"+reg.Host+"/catalogs/kpt-functions@"+strings.TrimSpace(stdout), written)
	mustRun(t, ExitOK, "", "verify", "--key", pub, "--require-signatures", "oci://"+ref)
	if code, out, errOut := run(t, "", "verify", "--key", other, "--require-signatures", "oci://"+ref); code != ExitFailure ||
		!strings.Contains(out+errOut, "catalogs/kpt-functions:v0.4@sha256:") {
		t.Errorf("verify with another key: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run(t, "", "catalog", "diff", "--key", other, "oci://"+ref, written); code != ExitUsage || !strings.Contains(errOut, "no signature by a trusted key") {
		t.Errorf("the catalog read with another key: exit %d\n%s", code, errOut)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sign-key", key}, "--sign-key signs the pushed catalog: give --push REF"},
		{[]string{"--push", ref, "--offline"}, "--offline asks no registry"},
		{[]string{"--push", ref, "--signature-format", "pgp"}, "--signature-format must be"},
		{[]string{"--push", ref, "--sign-key", filepath.Join(tmp, "missing.key")}, "--sign-key"},
	} {
		if code, _, stderr := run(t, "", append(importArgs, tc.args...)...); code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
}

// TestCatalogImportReadsRegularFilesOnly: a metadata.yaml that is a link, a FIFO or too large is
// refused before it is read whole, naming it. Before, a link to /dev/zero read until memory ran
// out, a FIFO waited past SIGTERM, and a 300 MB file was read whole before its size was checked.
func TestCatalogImportReadsRegularFilesOnly(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, []byte("image: x\n#"+strings.Repeat("x", 1<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, want string
		make       func(path string) error
	}{
		{"a link", "not a regular file", func(path string) error { return os.Symlink(big, path) }},
		{"a link to a device", "not a regular file", func(path string) error { return os.Symlink("/dev/zero", path) }},
		{"a FIFO", "not a regular file", func(path string) error { return syscall.Mkfifo(path, 0o644) }},
		{"too large", "above the limit of 65536", func(path string) error { return os.WriteFile(path, []byte(strings.Repeat("#\n", 40_000)), 0o644) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "set-namespace"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tt.make(filepath.Join(dir, "set-namespace", "metadata.yaml")); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := readKptMetadata(dir, false)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "set-namespace/metadata.yaml") {
					t.Errorf("error %v; want %q naming the file", err, tt.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the import did not return: it is reading what it should have refused")
			}
		})
	}
}

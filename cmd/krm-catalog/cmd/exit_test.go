package cmd

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// docs/cli.md's exit table, row by row, for the commands that check and move documents (the
// function commands' rows are held by e2e/functions' verdict matrix): each kind of failure exits
// as the table says, on every command it can happen on.
func TestExitTable(t *testing.T) {
	dir := ociEnv(t)
	reg := registrytest.Distribution(t)
	locked := registrytest.DistributionWithAuth(t, "ci", "s3cret") // refuses anyone without credentials
	const reference = "../../../catalog/testdata/reference/catalog.yaml"
	orig, err := os.ReadFile(reference)
	if err != nil {
		t.Fatal(err)
	}
	// an update that makes a field required: breaking
	breaking := writeTestFile(t, dir, "breaking.yaml", strings.ReplaceAll(string(orig), "required: [namespace]", "required: [namespace, updateReferences]"), 0o644)
	notYAML := writeTestFile(t, dir, "not-yaml.yaml", "kind: [unclosed\n", 0o644)
	invalid := "../../../catalog/testdata/invalid/05-missing-group.yaml"
	missing := dir + "/missing.yaml"
	pushed := reg.Host + "/catalogs/example:v1"
	mustRun(t, ExitOK, "", "push", pushed, reference)
	pub := writeTestFile(t, dir, "cosign.pub", string(signtest.KeyPair(t, "k").PublicPEM), 0o644)
	absent := writeTestFile(t, dir, "absent.yaml", `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: absent
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
                - bin: echo
                  os: linux
                  arch: amd64
                  uri: oci://`+reg.Host+`/fns/none:v1
                  sha256: `+strings.Repeat("a", 64)+`
`, 0o644)

	// a service that has published the reference catalog, and refuses or fails what the case says
	service := func(latest, put int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/catalog.yaml"):
				if latest != http.StatusOK {
					http.Error(w, `{"error":{"message":"the database is down"}}`, latest)
					return
				}
				w.Header().Set("X-Catalog-Version", "1.0.0")
				w.Write(orig)
			case r.Method == http.MethodPut:
				if put != http.StatusCreated {
					http.Error(w, `{"error":{"message":"version 1.1.0 exists with other bytes"}}`, put)
					return
				}
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(`{"created":true,"catalog":{"catalog":"example-functions","version":"1.1.0","digest":"sha256:00"}}`))
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	ok := service(http.StatusOK, http.StatusCreated)
	nobody := func() string { // a port nothing listens on any more
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr
	}()
	publish := func(server string, args ...string) []string {
		return append([]string{"publish", "--server", server, "--token", "t", "--version", "1.1.0"}, args...)
	}

	tests := []struct {
		row, name string
		args      []string
		code      int
		says      string // in what it printed
	}{
		{"none", "validate a valid catalog", []string{"validate", reference}, ExitOK, "0 errors"},
		{"none", "verify with nothing to check warns", []string{"verify", t.TempDir()}, ExitOK, "warning: nothing to verify"},
		{"none", "verify --offline of a valid catalog", []string{"verify", "--offline", reference}, ExitOK, "not checked"},
		{"none", "catalog diff without --fail-on", []string{"catalog", "diff", reference, breaking}, ExitOK, ""},
		{"none", "publish", publish(ok, breaking), ExitOK, ""},
		{"none", "pull", []string{"pull", "-o", dir + "/out", pushed}, ExitOK, ""},

		{"a check found problems", "validate: an error", []string{"validate", invalid}, ExitFailure, "1 error"},
		{"a check found problems", "validate: not YAML", []string{"validate", notYAML}, ExitFailure, "error"},
		{"a check found problems", "verify: an error", []string{"verify", "--offline", invalid}, ExitFailure, "1 error"},
		{"a check found problems", "verify: not YAML", []string{"verify", "--offline", notYAML}, ExitFailure, "error"},
		{"a check found problems", "verify: an artifact the registry does not have", []string{"verify", absent}, ExitFailure, "resolve "},
		{"a check found problems", "catalog diff --fail-on breaking", []string{"catalog", "diff", "--fail-on", "breaking", reference, breaking}, ExitFailure, ""},
		{"a check found problems", "catalog diff --fail-on any", []string{"catalog", "diff", "--fail-on", "any", reference, breaking}, ExitFailure, ""},
		{"a check found problems", "publish --fail-on breaking", publish(ok, "--fail-on", "breaking", breaking), ExitFailure, "not published"},
		{"a check found problems", "publish a catalog with errors", publish(nobody, invalid), ExitFailure, "not published: the file has errors"},
		{"a check found problems", "push a catalog with errors", []string{"push", reg.Host + "/bad:v1", invalid}, ExitFailure, "does not validate; not pushed"},

		{"an operation failed", "push refused by the registry", []string{"push", locked.Host + "/catalogs/x:v1", reference}, ExitFailure, ""},
		{"an operation failed", "pull of a tag the registry does not have", []string{"pull", "-o", dir + "/none", reg.Host + "/catalogs/none:v1"}, ExitFailure, "not found"},
		{"an operation failed", "pull of an artifact without a signature by the key", []string{"pull", "--key", pub, "-o", dir + "/unsigned", pushed}, ExitFailure, "signature"},
		{"an operation failed", "publish refused by the service (409)", publish(service(http.StatusNotFound, http.StatusConflict), breaking), ExitFailure, "exists with other bytes"},
		{"an operation failed", "publish failed by the service (500)", publish(service(http.StatusNotFound, http.StatusInternalServerError), breaking), ExitFailure, "not published"},
		{"an operation failed", "publish: the service fails the latest version's query (500)", publish(service(http.StatusInternalServerError, http.StatusCreated), breaking), ExitFailure, "the database is down"},
		{"an operation failed", "publish: nobody answers", publish(nobody, breaking), ExitFailure, "is `krm-catalog serve` running there?"},
		{"an operation failed", "mirror refused by the destination", []string{"mirror", reference, locked.Host + "/mirror"}, ExitFailure, ""},

		{"the command line is wrong", "validate", []string{"validate", "--nope", reference}, ExitUsage, "unknown flag: --nope"},
		{"the command line is wrong", "verify", []string{"verify", "--nope", reference}, ExitUsage, "unknown flag: --nope"},
		{"the command line is wrong", "catalog diff", []string{"catalog", "diff", reference}, ExitUsage, "accepts 2 arg(s)"},
		{"the command line is wrong", "catalog diff --fail-on", []string{"catalog", "diff", "--fail-on", "sometimes", reference, breaking}, ExitUsage, "--fail-on must be"},
		{"the command line is wrong", "publish", publish(ok, "--fail-on", "sometimes", breaking), ExitUsage, "--fail-on must be"},
		{"the command line is wrong", "mirror", []string{"mirror", reference}, ExitUsage, "accepts 2 arg(s)"},
		{"the command line is wrong", "pull", []string{"pull", "--nope", pushed}, ExitUsage, "unknown flag: --nope"},
		{"the command line is wrong", "push", []string{"push", pushed}, ExitUsage, ""},

		{"what runs is not trusted or allowed", "publish: a token over plain http to another host", publish("http://catalogs.invalid", breaking), ExitUsage, "--allow-http-token"},

		{"input that cannot be read", "validate: a missing file", []string{"validate", missing}, ExitUsage, "missing.yaml"},
		{"input that cannot be read", "verify: a missing file", []string{"verify", missing}, ExitUsage, "missing.yaml"},
		{"input that cannot be read", "catalog diff: a missing file", []string{"catalog", "diff", reference, missing}, ExitUsage, "missing.yaml"},
		{"input that cannot be read", "catalog diff: a catalog that does not validate", []string{"catalog", "diff", reference, invalid}, ExitUsage, ""},
		{"input that cannot be read", "publish: a missing file", publish(ok, missing), ExitUsage, "missing.yaml"},
		{"input that cannot be read", "push: a missing file", []string{"push", reg.Host + "/catalogs/y:v1", missing}, ExitUsage, "missing.yaml"},
		{"input that cannot be read", "mirror: a missing source", []string{"mirror", missing, reg.Host + "/mirror"}, ExitUsage, "missing.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.row+"/"+tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.says) {
				t.Errorf("%v: exit %d, want %d (%s) saying %q\nstdout: %s\nstderr: %s", tc.args, code, tc.code, tc.row, tc.says, stdout, stderr)
			}
		})
	}
}

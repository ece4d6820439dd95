package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/apiclient"
	"github.com/krm-catalog/krm-catalog/catalog/diff"
	"github.com/krm-catalog/krm-catalog/store/storetest"
)

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCuratedCatalogDiff runs `catalog diff --server` on a platform's catalog that lists acme's
// function by reference: nothing lags while acme's catalog is unchanged; once acme moves v1 to a
// new digest and adds v2, diff says the entry lags acme's runtime of v1 and acme's version v2,
// not as breaking changes, and not for the platform's own function.
func TestCuratedCatalogDiff(t *testing.T) {
	t.Parallel()
	s := startService(t, storetest.NewDatabase(t))
	acme, platform := token(t, s, "acme.dev"), token(t, s, "platform.example")
	dir := t.TempDir()
	publish := func(tok, name, version string, body []byte) {
		t.Helper()
		if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/"+name+"/versions/"+version, tok, body); r.status != http.StatusCreated {
			t.Fatalf("publish %s %s: %d %s", name, version, r.status, r.body)
		}
	}
	acmeV1 := fnEntry("fn.acme.dev", "SetLabels", "acme.dev", "v1", containerRuntime("registry.example.com/acme/set-labels", "a1"))
	ownEntry := fnEntry("fn.platform.example", "Policy", "platform.example", "v1", containerRuntime("registry.example.com/platform/policy", "c3"))
	publish(acme, "acme-functions", "1.0.0", catalogDoc("acme-functions", acmeV1))
	curated := writeFile(t, dir, "platform.yaml", catalogDoc("platform-functions", acmeV1, ownEntry))
	publish(platform, "platform-functions", "1.0.0", catalogDoc("platform-functions", acmeV1, ownEntry))

	diffCLI := func(args ...string) (int, string, string) {
		return runCLI(t, append([]string{"catalog", "diff", "--cache-dir", filepath.Join(dir, "cache"), "--server", s.url}, args...)...)
	}
	code, out, errOut := diffCLI(curated, curated)
	if code != 0 || !strings.Contains(out, "no changes") || strings.Contains(out, "curated-lags") {
		t.Errorf("before acme moves: exit %d\n%s%s", code, out, errOut)
	}

	// acme moves v1 to a new digest and adds v2; the platform's entry now lags both
	acmeV2 := strings.Replace(fnEntry("fn.acme.dev", "SetLabels", "acme.dev", "v1", containerRuntime("registry.example.com/acme/set-labels", "f6")),
		"      versions:\n", "      versions:\n        - name: v2\n          runtime:\n"+containerRuntime("registry.example.com/acme/set-labels", "e7"), 1)
	publish(acme, "acme-functions", "1.1.0", catalogDoc("acme-functions", acmeV2))

	code, out, errOut = diffCLI("--fail-on", "breaking", curated, curated)
	if code != 0 {
		t.Fatalf("a lag is not a breaking change: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"no changes",
		"2 curated entr(ies) of " + curated + " behind their publishers:",
		"curated-lags  fn.acme.dev/SetLabels v1  container registry.example.com/acme/set-labels@sha256:" + strings.Repeat("a1", 32) +
			" -> container registry.example.com/acme/set-labels@sha256:" + strings.Repeat("f6", 32) + " (lags the owner's runtime of version v1)",
		"curated-lags  fn.acme.dev/SetLabels v2  acme.dev publishes it (lags the owner's version v2: the catalog does not list it)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Policy") || strings.Contains(out, "BREAKING") {
		t.Errorf("the platform's own function, or a breaking mark, in:\n%s", out)
	}

	code, out, errOut = diffCLI("--format", "json", curated, curated)
	var rep diff.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s%s", code, err, out, errOut)
	}
	var got []string
	for _, c := range rep.Lagging {
		got = append(got, fmt.Sprintf("%s %s %s breaking=%t", c.Kind, c.Subject(), c.Reason, c.Breaking))
	}
	want := []string{
		"curated-lags fn.acme.dev/SetLabels v1 lags the owner's runtime of version v1 breaking=false",
		"curated-lags fn.acme.dev/SetLabels v2 lags the owner's version v2: the catalog does not list it breaking=false",
	}
	if d := cmp.Diff(want, got); d != "" || rep.Breaking != 0 || len(rep.Changes) != 0 {
		t.Errorf("report %+v; lagging (-want +got):\n%s", rep, d)
	}

	// without --server nothing is asked; a service that cannot answer is exit 2, "could not compare"
	if code, out, _ := runCLI(t, "catalog", "diff", "--cache-dir", filepath.Join(dir, "cache"), curated, curated); code != 0 || strings.Contains(out, "curated") {
		t.Errorf("without --server: exit %d\n%s", code, out)
	}
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "broken", http.StatusInternalServerError) }))
	t.Cleanup(broken.Close)
	if code, _, errOut := runCLI(t, "catalog", "diff", "--cache-dir", filepath.Join(dir, "cache"), "--server", broken.URL, curated, curated); code != 2 ||
		!strings.Contains(errOut, "compare curated entries with their publishers': broken (HTTP 500)") {
		t.Errorf("a failing service: exit %d\n%s", code, errOut)
	}
}

// TestProposalsCLI is the proposal story through `krm-catalog catalog propose|proposals|approve|
// reject` against the service: acme proposes, banana cannot, acme cannot approve, the catalog's
// publisher approves one proposal as a new version and rejects another with a reason.
func TestProposalsCLI(t *testing.T) {
	t.Parallel()
	s := startService(t, storetest.NewDatabase(t))
	acme, banana, platform := token(t, s, "acme.dev"), token(t, s, "banana.example"), token(t, s, "platform.example")
	ownEntry := fnEntry("fn.platform.example", "Policy", "platform.example", "v1", containerRuntime("registry.example.com/platform/policy", "c3"))
	if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/official/versions/1.0.0", platform, catalogDoc("official", ownEntry)); r.status != http.StatusCreated {
		t.Fatalf("the official catalog: %d %s", r.status, r.body)
	}
	dir := t.TempDir()
	validate := writeFile(t, dir, "validate.yaml", definitionDoc(fnEntry("fn.acme.dev", "Validate", "acme.dev", "v1", containerRuntime("registry.example.com/acme/validate", "a7"))))
	lint := writeFile(t, dir, "lint.yaml", definitionDoc(fnEntry("fn.acme.dev", "Lint", "acme.dev", "v1", containerRuntime("registry.example.com/acme/lint", "a8"))))
	cli := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"catalog"}, args...)...)
		if code != want {
			t.Fatalf("catalog %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out + errOut
	}
	srv := "--server=" + s.url

	if out := cli(0, "propose", srv, "--token", acme, "official", validate); out != "proposal 1: fn.acme.dev/Validate v1 for catalog official (open)\n" {
		t.Errorf("propose: %q", out)
	}
	if out := cli(0, "propose", srv, "--token", acme, "official", validate); !strings.HasPrefix(out, "proposal 1: ") {
		t.Errorf("proposing again returns the open proposal: %q", out)
	}
	if out := cli(1, "propose", srv, "--token", banana, "official", validate); !strings.Contains(out, "not proposed") || !strings.Contains(out, "HTTP 403") {
		t.Errorf("banana proposes acme's function: %q", out)
	}
	if out := cli(0, "propose", srv, "--format", "json", "--token", acme, "official", lint); !strings.Contains(out, `"id": 2`) && !strings.Contains(out, `"id":2`) {
		t.Errorf("propose --format json: %q", out)
	}

	out := cli(0, "proposals", srv, "official")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], "1   fn.acme.dev/Validate  v1") ||
		!strings.Contains(lines[1], "acme.dev") || !strings.HasPrefix(lines[2], "2   fn.acme.dev/Lint") {
		t.Errorf("proposals:\n%s", out)
	}
	var listed struct{ Proposals []apiclient.Proposal }
	if err := json.Unmarshal([]byte(cli(0, "proposals", srv, "--format", "json", "official")), &listed); err != nil || len(listed.Proposals) != 2 || listed.Proposals[0].Status != "open" {
		t.Errorf("proposals --format json: %+v %v", listed, err)
	}

	if out := cli(1, "approve", srv, "--token", acme, "--version", "1.1.0", "official", "1"); !strings.Contains(out, `publisher \"platform.example\" decides`) && !strings.Contains(out, `publisher "platform.example" decides`) {
		t.Errorf("the proposer approves: %q", out)
	}
	if out := cli(0, "approve", srv, "--token", platform, "--version", "1.1.0", "official", "#1"); !strings.HasPrefix(out, "proposal 1 approved: catalog official version 1.1.0 published: sha256:") {
		t.Errorf("approve: %q", out)
	}
	if got := string(do(t, http.MethodGet, s.url+"/catalogs/official/1.1.0/catalog.yaml", "", nil).body); !strings.Contains(got, "kind: Validate") || !strings.Contains(got, "kind: Policy") {
		t.Errorf("version 1.1.0:\n%s", got)
	}
	if out := cli(0, "reject", srv, "--token", platform, "--reason", "we have a linter", "official", "2"); out != "proposal 2 rejected: we have a linter\n" {
		t.Errorf("reject: %q", out)
	}
	if out := cli(0, "proposals", srv, "official"); out != "catalog official has no open proposals\n" {
		t.Errorf("proposals after deciding both: %q", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"approve", srv, "--token", platform, "official", "1"}, "--version is required"},
		{[]string{"reject", srv, "--token", platform, "official", "2"}, "--reason is required"},
		{[]string{"approve", srv, "--token", platform, "--version", "2", "official", "x"}, "a proposal is a number from 1"},
		{[]string{"propose", srv, "--token", acme, "official", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
	} {
		t.Run(tc.args[0]+" "+tc.want, func(t *testing.T) {
			if out := cli(2, tc.args...); !strings.Contains(out, tc.want) {
				t.Errorf("%q, want it to mention %q", out, tc.want)
			}
		})
	}
}

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/store"
	"github.com/krm-catalog/krm-catalog/store/storetest"
)

// fnEntry is one function of a catalog, or the spec of a definition, in YAML at the indent of a
// catalog's list item (the definition form is re-indented by definitionDoc).
func fnEntry(group, kind, publisher, version, runtime string) string {
	return fmt.Sprintf(`    - group: %s
      names:
        kind: %s
      description: %s for the curation tests.
      publisher: %s
      versions:
        - name: %s
          runtime:
%s`, group, kind, kind, publisher, version, runtime)
}

func containerRuntime(image, hex string) string {
	return fmt.Sprintf("            container:\n              image: %s@sha256:%s\n", image, strings.Repeat(hex, 64/len(hex)))
}

func execRuntime(hex string) string {
	return fmt.Sprintf(`            exec:
              platforms:
                - bin: fn
                  os: linux
                  arch: amd64
                  uri: https://downloads.example.com/fn-linux-amd64
                  sha256: %s
`, strings.Repeat(hex, 64/len(hex)))
}

func catalogDoc(name string, entries ...string) []byte {
	return []byte("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata:\n  name: " + name +
		"\nspec:\n  krmFunctions:\n" + strings.Join(entries, ""))
}

// definitionDoc is a KRMFunctionDefinition whose spec is entry (a catalog list item).
func definitionDoc(entry string) []byte {
	lines := strings.Split(strings.TrimRight(entry, "\n"), "\n")
	for i, l := range lines {
		l = strings.TrimPrefix(l, "    ")
		if i == 0 {
			l = strings.TrimPrefix(l, "- ")
		} else {
			l = strings.TrimPrefix(l, "  ")
		}
		lines[i] = "  " + l
	}
	return []byte("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionDefinition\nmetadata:\n  name: proposed\nspec:\n" + strings.Join(lines, "\n") + "\n")
}

func auditActions(t *testing.T, s *service) []string {
	t.Helper()
	entries, err := s.store.AuditLog(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, fmt.Sprintf("%s %s %s %v", e.Action, e.Publisher, e.Subject, e.Details["outcome"]))
	}
	return out
}

// TestCuratedCatalog is a platform team's catalog of functions published by others, through the
// API: acme.dev and banana.example publish; platform.example publishes a catalog that lists their
// functions exactly as published, and its own; a version that changes acme's image is refused
// naming acme.dev.
func TestCuratedCatalog(t *testing.T) {
	t.Parallel()
	s := startService(t, storetest.NewDatabase(t))
	acme, banana, platform := token(t, s, "acme.dev"), token(t, s, "banana.example"), token(t, s, "platform.example")

	acmeEntry := fnEntry("fn.acme.dev", "SetLabels", "acme.dev", "v1", containerRuntime("registry.example.com/acme/set-labels", "a1"))
	bananaEntry := fnEntry("fn.banana.example", "Peel", "banana.example", "v1", execRuntime("b2"))
	ownEntry := fnEntry("fn.platform.example", "Policy", "platform.example", "v1", containerRuntime("registry.example.com/platform/policy", "c3"))
	publish := func(tok, name, version string, body []byte) response {
		t.Helper()
		return do(t, http.MethodPut, s.url+"/api/v1/catalogs/"+name+"/versions/"+version, tok, body)
	}
	if r := publish(acme, "acme-functions", "1.0.0", catalogDoc("acme-functions", acmeEntry)); r.status != http.StatusCreated {
		t.Fatalf("acme publishes: %d %s", r.status, r.body)
	}
	if r := publish(banana, "banana-functions", "1.0.0", catalogDoc("banana-functions", bananaEntry)); r.status != http.StatusCreated {
		t.Fatalf("banana publishes: %d %s", r.status, r.body)
	}

	curated := catalogDoc("platform-functions", acmeEntry, bananaEntry, ownEntry)
	if r := publish(platform, "platform-functions", "1.0.0", curated); r.status != http.StatusCreated {
		t.Fatalf("the platform's catalog of acme's, banana's and its own functions: %d %s", r.status, r.body)
	}

	refusals := []struct {
		name, entry, want string
	}{
		{"another image", fnEntry("fn.acme.dev", "SetLabels", "acme.dev", "v1", containerRuntime("registry.example.com/platform/set-labels", "a1")),
			`fn.acme.dev/SetLabels version v1: the runtime is not the one publisher \"acme.dev\" published for it`},
		{"another digest", fnEntry("fn.acme.dev", "SetLabels", "acme.dev", "v1", containerRuntime("registry.example.com/acme/set-labels", "d4")),
			`the runtime is not the one publisher \"acme.dev\" published for it`},
		{"another executable", fnEntry("fn.banana.example", "Peel", "banana.example", "v1", execRuntime("e5")),
			`the runtime is not the one publisher \"banana.example\" published for it`},
		{"a version acme never published", fnEntry("fn.acme.dev", "SetLabels", "acme.dev", "v2", containerRuntime("registry.example.com/acme/set-labels", "a1")),
			`version v2: publisher \"acme.dev\" publishes no such version`},
		{"the curator named as publisher", fnEntry("fn.acme.dev", "SetLabels", "platform.example", "v1", containerRuntime("registry.example.com/acme/set-labels", "a1")),
			`group \"fn.acme.dev\" belongs to publisher \"acme.dev\"`},
		{"a new kind in acme's group", fnEntry("fn.acme.dev", "Other", "acme.dev", "v1", containerRuntime("registry.example.com/acme/other", "a1")),
			`group \"fn.acme.dev\" belongs to publisher \"acme.dev\"`},
		{"its own function naming another publisher", fnEntry("fn.platform.example", "Policy", "acme.dev", "v1", containerRuntime("registry.example.com/platform/policy", "c3")),
			`fn.platform.example/Policy names publisher \"acme.dev\", but the token acts for \"platform.example\"`},
	}
	for _, tc := range refusals {
		r := publish(platform, "platform-functions", "1.0.1", catalogDoc("platform-functions", tc.entry))
		if r.status != http.StatusForbidden || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s: %d %s, want 403 with %s", tc.name, r.status, r.body, tc.want)
		}
	}

	// the platform's catalog.yaml serves the entries as published
	got := do(t, http.MethodGet, s.url+"/catalogs/platform-functions/catalog.yaml", "", nil)
	if got.status != http.StatusOK || string(got.body) != string(curated) {
		t.Errorf("catalog.yaml: %d\n%s", got.status, got.body)
	}
	// the API says who curates each entry
	var fn store.FunctionDetail
	if err := json.Unmarshal(do(t, http.MethodGet, s.url+"/api/v1/functions/fn.acme.dev/SetLabels", "", nil).body, &fn); err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, e := range fn.Entries {
		sources = append(sources, e.Source.Catalog+" curatedBy="+e.Source.CuratedBy)
	}
	if want := []string{"acme-functions curatedBy=", "platform-functions curatedBy=platform.example"}; strings.Join(sources, ";") != strings.Join(want, ";") {
		t.Errorf("entries of acme's function: %q, want %q", sources, want)
	}
	if fn.Publisher != "acme.dev" || strings.Join(fn.Catalogs, ",") != "acme-functions,platform-functions" {
		t.Errorf("function: publisher %q catalogs %v", fn.Publisher, fn.Catalogs)
	}
	// resolving through the platform's catalog runs acme's image
	res := do(t, http.MethodGet, s.url+"/api/v1/resolve?apiVersion=fn.acme.dev/v1&kind=SetLabels&catalog=platform-functions", "", nil).json(t)
	if fnv, _ := res["function"].(map[string]any); fnv["imageDigest"] != "sha256:"+strings.Repeat("a1", 32) {
		t.Errorf("resolve through the platform's catalog: %v", res)
	}

	// the website: the function's page names the catalogs that list it and who curates it; the
	// catalog's page marks the curated entries
	page := string(do(t, http.MethodGet, s.url+"/functions/fn.acme.dev/SetLabels", "", nil).body)
	for _, want := range []string{`data-listed-by="platform-functions"`, `data-curated-by="platform.example"`, `data-listed-by="acme-functions"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the function's page lacks %s", want)
		}
	}
	page = string(do(t, http.MethodGet, s.url+"/catalogs/platform-functions", "", nil).body)
	for _, want := range []string{`data-curated-from="acme.dev"`, `data-curated-from="banana.example"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the catalog's page lacks %s", want)
		}
	}
	if strings.Count(page, "data-curated-from=") != 2 {
		t.Errorf("the catalog's page marks %d entries curated, want 2", strings.Count(page, "data-curated-from="))
	}

	// acme moves v1 to a new digest: the platform's entry lags, and stays as published until the
	// platform republishes, which must then follow
	moved := fnEntry("fn.acme.dev", "SetLabels", "acme.dev", "v1", containerRuntime("registry.example.com/acme/set-labels", "f6"))
	if r := publish(acme, "acme-functions", "1.1.0", catalogDoc("acme-functions", moved)); r.status != http.StatusCreated {
		t.Fatalf("acme moves v1: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodGet, s.url+"/catalogs/platform-functions/catalog.yaml", "", nil); string(r.body) != string(curated) {
		t.Errorf("the curated entry changed with acme's publish")
	}
	if r := publish(platform, "platform-functions", "1.0.2", curated); r.status != http.StatusForbidden || !strings.Contains(string(r.body), "acme.dev") {
		t.Errorf("republishing acme's former runtime: %d %s, want 403 naming acme.dev", r.status, r.body)
	}
	if r := publish(platform, "platform-functions", "1.0.2", catalogDoc("platform-functions", moved, bananaEntry, ownEntry)); r.status != http.StatusCreated {
		t.Errorf("following acme: %d %s", r.status, r.body)
	}

	var publishes []string
	for _, a := range auditActions(t, s) {
		if strings.HasPrefix(a, "catalog.publish platform.example") {
			publishes = append(publishes, a)
		}
	}
	if len(publishes) != 1+len(refusals)+2 {
		t.Errorf("the platform's publishes in the audit log: %q", publishes)
	}
}

// TestProposals is a function's publisher contributing it to a catalog another publisher
// maintains, through the API: acme.dev proposes; banana.example cannot propose acme's function;
// acme cannot approve; the catalog's publisher approves it as a new version, which lists it.
func TestProposals(t *testing.T) {
	t.Parallel()
	s := startService(t, storetest.NewDatabase(t))
	acme, banana, platform := token(t, s, "acme.dev"), token(t, s, "banana.example"), token(t, s, "platform.example")
	ownEntry := fnEntry("fn.platform.example", "Policy", "platform.example", "v1", containerRuntime("registry.example.com/platform/policy", "c3"))
	if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/official/versions/1.0.0", platform, catalogDoc("official", ownEntry)); r.status != http.StatusCreated {
		t.Fatalf("the official catalog: %d %s", r.status, r.body)
	}
	proposals := s.url + "/api/v1/catalogs/official/proposals"
	acmeEntry := fnEntry("fn.acme.dev", "Validate", "acme.dev", "v1", containerRuntime("registry.example.com/acme/validate", "a7"))
	proposal := definitionDoc(acmeEntry)

	r := do(t, http.MethodPost, proposals, acme, proposal)
	if r.status != http.StatusCreated {
		t.Fatalf("acme proposes its function: %d %s", r.status, r.body)
	}
	var p store.Proposal
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.ID == 0 || p.Status != "open" || p.Proposer != "acme.dev" || r.header.Get("Location") != fmt.Sprintf("/api/v1/catalogs/official/proposals/%d", p.ID) {
		t.Errorf("the proposal: %+v, Location %q", p, r.header.Get("Location"))
	}
	if again := do(t, http.MethodPost, proposals, acme, proposal); again.status != http.StatusOK || !strings.Contains(string(again.body), fmt.Sprintf(`"id":%d`, p.ID)) {
		t.Errorf("the same proposal again: %d %s, want 200 with the open one", again.status, again.body)
	}
	// banana.example cannot propose acme's function, in its own name or in acme's
	asBanana := definitionDoc(fnEntry("fn.acme.dev", "Validate", "banana.example", "v1", containerRuntime("registry.example.com/acme/validate", "a7")))
	if r := do(t, http.MethodPost, proposals, banana, asBanana); r.status != http.StatusForbidden || !strings.Contains(string(r.body), `group \"fn.acme.dev\" belongs to publisher \"acme.dev\"`) {
		t.Errorf("banana proposes in acme's group: %d %s, want 403 naming acme.dev", r.status, r.body)
	}
	if r := do(t, http.MethodPost, proposals, banana, proposal); r.status != http.StatusForbidden || !strings.Contains(string(r.body), `the definition's publisher is \"acme.dev\"`) {
		t.Errorf("banana proposes acme's definition: %d %s, want 403", r.status, r.body)
	}
	if r := do(t, http.MethodPost, s.url+"/api/v1/catalogs/nothing/proposals", acme, proposal); r.status != http.StatusNotFound {
		t.Errorf("a proposal to no catalog: %d %s", r.status, r.body)
	}

	// anyone lists the open proposals
	list := do(t, http.MethodGet, proposals, "", nil)
	if list.status != http.StatusOK || strings.Count(string(list.body), `"status":"open"`) != 1 || !strings.Contains(string(list.body), `"kind":"Validate"`) {
		t.Errorf("GET proposals: %d %s", list.status, list.body)
	}
	if page := string(do(t, http.MethodGet, s.url+"/catalogs/official", "", nil).body); !strings.Contains(page, fmt.Sprintf(`data-proposal="%d"`, p.ID)) {
		t.Errorf("the catalog's page does not list the open proposal")
	}

	approve := fmt.Sprintf("%s/%d/approve?version=1.1.0", proposals, p.ID)
	if r := do(t, http.MethodPost, approve, acme, nil); r.status != http.StatusForbidden || !strings.Contains(string(r.body), `publisher \"platform.example\" decides`) {
		t.Errorf("the proposer approves: %d %s, want 403", r.status, r.body)
	}
	if r := do(t, http.MethodPost, approve, platform, nil); r.status != http.StatusCreated || r.header.Get("Location") != "/catalogs/official/1.1.0/catalog.yaml" {
		t.Fatalf("the catalog's publisher approves: %d %s", r.status, r.body)
	}
	got := string(do(t, http.MethodGet, s.url+"/catalogs/official/1.1.0/catalog.yaml", "", nil).body)
	for _, want := range []string{"kind: Validate", "registry.example.com/acme/validate@sha256:" + strings.Repeat("a7", 32), "kind: Policy"} {
		if !strings.Contains(got, want) {
			t.Errorf("version 1.1.0 lacks %q:\n%s", want, got)
		}
	}
	if r := do(t, http.MethodGet, s.url+"/api/v1/functions/fn.acme.dev/Validate", "", nil); !strings.Contains(string(r.body), `"curatedBy":"platform.example"`) {
		t.Errorf("the approved function: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodPost, approve, platform, nil); r.status != http.StatusOK {
		t.Errorf("approving again (a retry): %d %s, want 200", r.status, r.body)
	}
	if r := do(t, http.MethodPost, fmt.Sprintf("%s/%d/approve?version=1.2.0", proposals, p.ID), platform, nil); r.status != http.StatusConflict {
		t.Errorf("approving a decided proposal as another version: %d %s, want 409", r.status, r.body)
	}
	if list := do(t, http.MethodGet, proposals, "", nil); strings.Contains(string(list.body), `"id"`) {
		t.Errorf("the approved proposal is still listed: %s", list.body)
	}
	// later versions of the catalog carry the entry on
	v12, err := s.store.CatalogContent(t.Context(), "official", "1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/official/versions/1.2.0", platform, v12.Bytes); r.status != http.StatusCreated {
		t.Errorf("republishing the approved entry: %d %s", r.status, r.body)
	}

	// a rejection closes a proposal with its reason
	other := definitionDoc(fnEntry("fn.acme.dev", "Lint", "acme.dev", "v1", containerRuntime("registry.example.com/acme/lint", "a8")))
	r = do(t, http.MethodPost, proposals, acme, other)
	if err := json.Unmarshal(r.body, &p); err != nil || r.status != http.StatusCreated {
		t.Fatalf("the second proposal: %d %s", r.status, r.body)
	}
	reject := fmt.Sprintf("%s/%d/reject", proposals, p.ID)
	if r := do(t, http.MethodPost, reject, acme, []byte(`{"reason":"mine"}`)); r.status != http.StatusForbidden {
		t.Errorf("the proposer rejects: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodPost, reject, platform, []byte(`{}`)); r.status != http.StatusBadRequest {
		t.Errorf("a rejection without a reason: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodPost, reject, platform, []byte(`{"reason":"we have a linter"}`)); r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"rejected","createdAt"`) && !strings.Contains(string(r.body), `"reason":"we have a linter"`) {
		t.Errorf("the catalog's publisher rejects: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodGet, fmt.Sprintf("%s/%d", proposals, p.ID), "", nil).json(t); r["status"] != "rejected" || r["reason"] != "we have a linter" || r["closedBy"] != "platform.example" {
		t.Errorf("the rejected proposal: %v", r)
	}

	// bounds: the size of a proposal, and the open proposals of one publisher for one catalog
	big := append(definitionDoc(acmeEntry), []byte("# "+strings.Repeat("x", store.MaxProposalBytes)+"\n")...)
	if r := do(t, http.MethodPost, proposals, acme, big); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a proposal above the limit: %d %s", r.status, r.body)
	}
	for i := range store.MaxOpenProposalsPerProposer + 1 {
		doc := definitionDoc(fnEntry("fn.acme.dev", fmt.Sprintf("Many%d", i), "acme.dev", "v1", containerRuntime("registry.example.com/acme/many", "a9")))
		r := do(t, http.MethodPost, proposals, acme, doc)
		want := http.StatusCreated
		if i == store.MaxOpenProposalsPerProposer {
			want = http.StatusConflict
		}
		if r.status != want {
			t.Errorf("open proposal %d: %d %s, want %d", i+1, r.status, r.body, want)
		}
	}

	var steps []string
	for _, a := range auditActions(t, s) {
		if strings.HasPrefix(a, "proposal.") {
			steps = append(steps, a)
		}
	}
	for _, want := range []string{"proposal.create acme.dev official#1 ok", "proposal.approve platform.example official#1 ok", "proposal.reject platform.example official#2 ok"} {
		if !strings.Contains(strings.Join(steps, "\n"), want) {
			t.Errorf("the audit log lacks %q: %q", want, steps)
		}
	}
}

// TestApprovedRuntimesFollowThePublisher: a runtime that came in through an approved proposal is
// its publisher's word for the catalog only until the publisher says otherwise, as a runtime of
// its own catalogs is: once acme.dev publishes another digest for v1, or proposes one that is
// approved, the curator can neither keep nor bring back the old one. Before, the old digest was
// accepted (201) for as long as the proposal stood approved.
func TestApprovedRuntimesFollowThePublisher(t *testing.T) {
	t.Parallel()
	s := startService(t, storetest.NewDatabase(t))
	acme, platform := token(t, s, "acme.dev"), token(t, s, "platform.example")
	own := fnEntry("fn.platform.example", "Policy", "platform.example", "v1", containerRuntime("registry.example.com/platform/policy", "c3"))
	if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/official/versions/1.0.0", platform, catalogDoc("official", own)); r.status != http.StatusCreated {
		t.Fatalf("the official catalog: %d %s", r.status, r.body)
	}
	proposals := s.url + "/api/v1/catalogs/official/proposals"
	old := fnEntry("fn.acme.dev", "Validate", "acme.dev", "v1", containerRuntime("registry.example.com/acme/validate", "a1"))
	replaced := fnEntry("fn.acme.dev", "Validate", "acme.dev", "v1", containerRuntime("registry.example.com/acme/validate", "b2"))
	approve := func(entry, version string) {
		t.Helper()
		r := do(t, http.MethodPost, proposals, acme, definitionDoc(entry))
		var p store.Proposal
		if err := json.Unmarshal(r.body, &p); err != nil || r.status != http.StatusCreated {
			t.Fatalf("the proposal: %d %s", r.status, r.body)
		}
		if r := do(t, http.MethodPost, fmt.Sprintf("%s/%d/approve?version=%s", proposals, p.ID, version), platform, nil); r.status != http.StatusCreated {
			t.Fatalf("the approval as %s: %d %s", version, r.status, r.body)
		}
	}
	publishOfficial := func(version, entry string) response {
		t.Helper()
		return do(t, http.MethodPut, s.url+"/api/v1/catalogs/official/versions/"+version, platform, catalogDoc("official", own, entry))
	}
	approve(old, "1.1.0")
	if r := publishOfficial("1.2.0", old); r.status != http.StatusCreated {
		t.Fatalf("carrying the approved entry on: %d %s", r.status, r.body)
	}
	// a later approved proposal replaces the runtime for the catalog
	approve(replaced, "1.3.0")
	if r := publishOfficial("1.4.0", old); r.status != http.StatusForbidden {
		t.Errorf("bringing back the runtime a later proposal replaced: %d %s, want 403", r.status, r.body)
	}
	if r := publishOfficial("1.4.0", replaced); r.status != http.StatusCreated {
		t.Fatalf("the current runtime: %d %s", r.status, r.body)
	}
	// and so does the publisher's own catalog
	third := fnEntry("fn.acme.dev", "Validate", "acme.dev", "v1", containerRuntime("registry.example.com/acme/validate", "c3"))
	if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/acme-functions/versions/1.0.0", acme, catalogDoc("acme-functions", third)); r.status != http.StatusCreated {
		t.Fatalf("acme's own catalog: %d %s", r.status, r.body)
	}
	for _, entry := range []string{old, replaced} {
		if r := publishOfficial("1.5.0", entry); r.status != http.StatusForbidden || !strings.Contains(string(r.body), `publisher \"acme.dev\"`) {
			t.Errorf("keeping a runtime acme.dev has replaced in its own catalog: %d %s, want 403 naming it", r.status, r.body)
		}
	}
	if r := publishOfficial("1.5.0", third); r.status != http.StatusCreated {
		t.Errorf("acme.dev's current runtime: %d %s", r.status, r.body)
	}
}

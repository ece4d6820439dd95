package functions

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/store"
	"github.com/krm-catalog/krm-catalog/web"
)

// siteStore is the website's store over one published catalog, held in memory.
type siteStore struct {
	name    string
	data    []byte
	details map[string]store.FunctionDetail // by group/kind
}

func newSiteStore(t *testing.T, name string, data []byte) *siteStore {
	t.Helper()
	doc, cat := catalogtest.Decode(t, data)
	spec, _ := doc.Value["spec"].(map[string]any)
	raw, _ := spec["krmFunctions"].([]any)
	s := &siteStore{name: name, data: data, details: map[string]store.FunctionDetail{}}
	src := store.Source{Catalog: name, CatalogVersion: "1.0.0", Digest: store.Digest(data), PublishedAt: time.Now()}
	for i, f := range cat.Functions {
		d := store.FunctionDetail{FunctionSummary: store.FunctionSummary{Group: f.Group, Kind: f.Kind, Publisher: f.Publisher,
			Description: f.Description, Tags: f.Tags, Catalogs: []string{name}}}
		rawVersions, _ := raw[i].(map[string]any)["versions"].([]any)
		for j, v := range f.Versions {
			// the version as PostgreSQL's jsonb gives it back
			b, err := json.Marshal(rawVersions[j])
			if err != nil {
				t.Fatal(err)
			}
			var vspec map[string]any
			if err := json.Unmarshal(b, &vspec); err != nil {
				t.Fatal(err)
			}
			d.Versions = append(d.Versions, v.Name)
			d.Runtimes = append(d.Runtimes, v.Runtime.Kinds()...)
			d.Entries = append(d.Entries, store.FunctionVersion{Group: f.Group, Kind: f.Kind, Version: v.Name, APIVersion: f.APIVersion(v),
				Publisher: f.Publisher, Tags: f.Tags, Runtimes: v.Runtime.Kinds(), Spec: vspec, Source: src})
		}
		s.details[f.Group+"/"+f.Kind] = d
	}
	return s
}

func (s *siteStore) GetFunction(_ context.Context, group, kind string) (store.FunctionDetail, error) {
	d, ok := s.details[group+"/"+kind]
	if !ok {
		return d, store.ErrNotFound
	}
	return d, nil
}

func (s *siteStore) SearchFunctions(context.Context, store.SearchQuery) (store.SearchResult, error) {
	return store.SearchResult{}, nil
}
func (s *siteStore) ListCatalogs(context.Context) ([]store.CatalogSummary, error) { return nil, nil }
func (s *siteStore) GetCatalog(context.Context, string) (store.CatalogSummary, error) {
	return store.CatalogSummary{}, store.ErrNotFound
}
func (s *siteStore) ListCatalogVersions(context.Context, string) ([]store.CatalogVersion, error) {
	return nil, nil
}
func (s *siteStore) CatalogContent(context.Context, string, string) (store.Content, error) {
	return store.Content{}, store.ErrNotFound
}
func (s *siteStore) GetPublisher(context.Context, string) (store.Publisher, error) {
	return store.Publisher{}, store.ErrNotFound
}
func (s *siteStore) PublisherFunctions(context.Context, string, int) ([]store.FunctionSummary, error) {
	return nil, nil
}
func (s *siteStore) PublisherCatalogs(context.Context, string) ([]store.CatalogSummary, error) {
	return nil, nil
}
func (s *siteStore) ListKeys(context.Context, string) ([]store.Key, error) { return nil, nil }
func (s *siteStore) ListIdentities(context.Context, string) ([]store.Identity, error) {
	return nil, nil
}
func (s *siteStore) ListProposals(context.Context, string) ([]store.Proposal, error) { return nil, nil }
func (s *siteStore) GetGroupOwner(_ context.Context, group string) (store.GroupOwner, error) {
	return store.GroupOwner{Group: group}, nil
}
func (s *siteStore) ListGrants(context.Context, string) ([]store.Grant, error) { return nil, nil }

var snippetRE = regexp.MustCompile(`(?s)<pre id="(snippet-[a-z-]+)"[^>]*><code>(.*?)</code></pre>`)

// pageSnippets fetches a function page and returns its snippets by element id, as a visitor copies
// them.
func pageSnippets(t *testing.T, srv *httptest.Server, path string) map[string]string {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", path, resp.StatusCode, err, body)
	}
	out := map[string]string{}
	for _, m := range snippetRE.FindAllStringSubmatch(string(body), -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

// fillConfig fills the placeholder the page leaves for SetNamespace's one required field.
func fillConfig(t *testing.T, n *yaml.RNode, namespace string) {
	t.Helper()
	if err := n.PipeE(yaml.SetField("namespace", yaml.NewStringRNode(namespace))); err != nil {
		t.Fatal(err)
	}
}

// Every snippet a function page offers runs, as copied from the rendered page with the function
// config filled in, with the tool it names: the Kustomization and the Composition (named from a
// Kustomization's transformers) with `krm-catalog build`, the Kptfile with `krm-catalog fn render`,
// and the `krm-catalog fn run` command as written. The page is web's handler over a store holding
// the published catalog, served over https with the catalog.yaml the snippets point at.
func TestWebsiteSnippetsRun(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	data := []byte(readFile(t, pub.catalog))
	site, err := web.New(web.Config{Store: newSiteStore(t, "e2e", data)})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	r.Get("/catalogs/e2e/catalog.yaml", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(data) })
	site.Mount(r)
	srv := httptest.NewTLSServer(r)
	t.Cleanup(srv.Close)
	env := append([]string{"SSL_CERT_FILE=" + fntest.CAFile(t, srv)}, pub.env...)
	catalogURL := srv.URL + "/catalogs/e2e/catalog.yaml"

	sn := pageSnippets(t, srv, "/functions/fn.example.com/SetNamespace")
	for _, id := range []string{"snippet-fn-config", "snippet-composition", "snippet-kustomization", "snippet-kptfile", "snippet-fn-run"} {
		if sn[id] == "" {
			t.Fatalf("the page has no %s snippet; it has %v", id, sn)
		}
	}
	cfg, err := yaml.Parse(sn["snippet-fn-config"])
	if err != nil {
		t.Fatal(err)
	}
	fillConfig(t, cfg, "from-the-website")
	fnYAML := cfg.MustString()
	root := t.TempDir()
	rr := run{env: env, dir: root}
	cache := t.TempDir()

	t.Run("kustomization", func(t *testing.T) {
		writeFile(t, root, "kust/kustomization.yaml", sn["snippet-kustomization"])
		writeFile(t, root, "kust/fn.yaml", fnYAML)
		writeFile(t, root, "kust/resources.yaml", deployment)
		out := rr.krm(t, "build", "kust", "--trusted-catalog", catalogURL, "--cache-dir", cache)
		if out.code != 0 || !strings.Contains(out.stdout, "namespace: from-the-website") {
			t.Errorf("krm-catalog build of the Kustomization snippet:\n%s", out)
		}
	})

	t.Run("composition", func(t *testing.T) {
		comp, err := yaml.Parse(sn["snippet-composition"])
		if err != nil {
			t.Fatal(err)
		}
		tr, err := comp.Pipe(yaml.Lookup("transformers", "0"))
		if err != nil || tr == nil {
			t.Fatalf("the Composition snippet has no transformer: %v", err)
		}
		fillConfig(t, tr, "from-the-composition")
		writeFile(t, root, "comp/composition.yaml", comp.MustString())
		writeFile(t, root, "comp/resources.yaml", deployment)
		// KEP-2299 beta: the Composition transforms a Kustomization's resources
		writeFile(t, root, "comp/kustomization.yaml", "resources:\n- resources.yaml\ntransformers:\n- composition.yaml\n")
		out := rr.krm(t, "build", "comp", "--trusted-catalog", catalogURL, "--cache-dir", cache)
		if out.code == 0 || !strings.Contains(out.stderr, "both composition.yaml and kustomization.yaml") {
			t.Errorf("a directory with both files must be refused (KEP-2299):\n%s", out)
		}
		if err := os.Rename(filepath.Join(root, "comp/composition.yaml"), filepath.Join(root, "comp/set-namespace.yaml")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, root, "comp/kustomization.yaml", "resources:\n- resources.yaml\ntransformers:\n- set-namespace.yaml\n")
		out = rr.krm(t, "build", "comp", "--trusted-catalog", catalogURL, "--cache-dir", cache)
		if out.code != 0 || !strings.Contains(out.stdout, "namespace: from-the-composition") {
			t.Errorf("krm-catalog build of the Composition snippet:\n%s", out)
		}
	})

	t.Run("kptfile", func(t *testing.T) {
		kf := sn["snippet-kptfile"]
		m := regexp.MustCompile(`exec: \./bin/([a-z-]+)`).FindStringSubmatch(kf)
		if m == nil {
			t.Fatalf("the Kptfile snippet names no ./bin executable:\n%s", kf)
		}
		// the note says to download the executable and check its sha256: the test's own build is it
		bin, err := os.ReadFile(bins.Fn["set-namespace"])
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, root, "kpt/Kptfile", kf)
		writeFile(t, root, "kpt/fn.yaml", fnYAML)
		writeFile(t, root, "kpt/deployment.yaml", deployment)
		p := writeFile(t, root, "kpt/bin/"+m[1], string(bin))
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
		out := rr.krm(t, "fn", "render", "kpt", "--allow-exec", "--cache-dir", cache)
		if out.code != 0 || !strings.Contains(readFile(t, filepath.Join(root, "kpt/deployment.yaml")), "namespace: from-the-website") {
			t.Errorf("krm-catalog fn render of the Kptfile snippet:\n%s", out)
		}
	})

	t.Run("fn run", func(t *testing.T) {
		cmd := strings.Fields(strings.ReplaceAll(sn["snippet-fn-run"], "\\\n", " "))
		if len(cmd) < 2 || cmd[0] != "krm-catalog" {
			t.Fatalf("the fn run snippet does not start with krm-catalog: %q", sn["snippet-fn-run"])
		}
		writeFile(t, root, "fn.yaml", fnYAML)
		writeFile(t, root, "app/deployment.yaml", deployment)
		out := rr.krm(t, append(cmd[1:], "--cache-dir", cache)...)
		if out.code != 0 || !strings.Contains(readFile(t, filepath.Join(root, "app/deployment.yaml")), "namespace: from-the-website") {
			t.Errorf("%s:\n%s", strings.Join(cmd, " "), out)
		}
	})
}

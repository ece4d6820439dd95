package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/store"
)

type catalogRow struct {
	store.CatalogSummary
	URL          string
	PublisherURL string
}

// catalogTable is the table of catalogs the catalogs and publisher pages share.
type catalogTable struct {
	Label         string // the id of the heading that names the table
	WithPublisher bool
	Rows          []catalogRow
}

type catalogsPage struct {
	Catalogs []catalogRow
	Table    catalogTable
	Base     string
}

func (s *Site) catalogList(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.store.ListCatalogs(r.Context())
	if err != nil {
		return err
	}
	rows := catalogRows(cs)
	return s.render(w, r, http.StatusOK, "catalogs", page{Title: "Catalogs", Section: "catalogs", Body: catalogsPage{Catalogs: rows, Table: catalogTable{Label: "catalogs-title", WithPublisher: true, Rows: rows}, Base: baseURL(r)}})
}

func catalogRows(cs []store.CatalogSummary) []catalogRow {
	out := make([]catalogRow, 0, len(cs))
	for _, c := range cs {
		out = append(out, catalogRow{CatalogSummary: c, URL: catalogURL(c.Name), PublisherURL: publisherURL(c.Publisher)})
	}
	return out
}

type catalogVersionRow struct {
	store.CatalogVersion
	URL         string // its page
	DocumentURL string
	Selected    bool
}

// catalogFunction is one function a catalog version lists.
type catalogFunction struct {
	Group, Kind, Description string
	URL                      string
	Versions                 []string
	Runtimes                 []string
	// CuratedFrom is the function's publisher when it is not the catalog's: the catalog lists
	// the function by reference, as that publisher published it.
	CuratedFrom *link
}

// proposalView is an open proposal of an entry for the catalog.
type proposalView struct {
	ID         int64
	Proposer   link
	Function   link
	Versions   []string
	ProposedAt time.Time
	URL        string // the proposal in the API, with its definition
}

// catalogPageSize is how many functions a catalog page lists.
const catalogPageSize = 100

type catalogPage struct {
	Name string
	// Total is the number of functions of the version; Functions are those of this page, which
	// starts at First (from 1).
	Total, First int
	Prev, Next   string // the neighbouring pages' addresses, "" at either end
	Publisher    link
	Latest       string
	Version      store.CatalogVersion
	Versions     []catalogVersionRow
	Functions    []catalogFunction
	LatestCurl   snippet
	PinnedCurl   snippet
	// ResolveCmd resolves the catalog's first function through this version, trusted: the
	// --catalog and --trusted-catalog flags every command that runs functions takes
	ResolveCmd  snippet
	Signature   *signatureView
	DocumentURL string
	Proposals   []proposalView
}

func (s *Site) catalog(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	name := chi.URLParam(r, "name")
	c, err := s.store.GetCatalog(ctx, name)
	if err != nil {
		return err
	}
	versions, err := s.store.ListCatalogVersions(ctx, name)
	if err != nil {
		return err
	}
	p := catalogPage{Name: c.Name, Publisher: link{Label: c.Publisher, URL: publisherURL(c.Publisher)}}
	if c.Latest != nil {
		p.Latest = c.Latest.Version
	}
	selected := r.URL.Query().Get("version")
	if selected == "" {
		selected = p.Latest
	}
	if s.signatures != nil {
		s.signatures.AnnotateCatalogVersions(ctx, versions)
	}
	found := false
	for _, v := range versions {
		row := catalogVersionRow{CatalogVersion: v, Selected: v.Version == selected,
			URL:         catalogURL(name) + "?version=" + url.QueryEscape(v.Version),
			DocumentURL: catalogURL(name) + "/" + url.PathEscape(v.Version) + "/catalog.yaml"}
		if row.Selected {
			p.Version, p.DocumentURL, found = v, row.DocumentURL, true
		}
		p.Versions = append(p.Versions, row)
	}
	if !found {
		return store.Errorf(store.ErrNotFound, "catalog %q has no version %q", name, selected)
	}
	if sv, ok := signatureWords[p.Version.Signature]; ok {
		sv.Status = p.Version.Signature
		if sv.Status == "verified" {
			sv.SignedBy = signerOf(p.Version.SignedBy)
		}
		p.Signature = &sv
	}
	pageNo := 1
	if v := r.URL.Query().Get("page"); v != "" {
		if pageNo, err = strconv.Atoi(v); err != nil || pageNo < 1 {
			return &badRequest{"The page number is not a number from 1."}
		}
	}
	fns, err := s.catalogs.functions(ctx, name+"\x00"+selected+"\x00"+p.Version.Digest, func(ctx context.Context) ([]catalogFunction, error) {
		content, err := s.store.CatalogContent(ctx, name, selected)
		if err != nil {
			return nil, err
		}
		return catalogFunctions(content, c.Publisher)
	})
	if err != nil {
		return err
	}
	proposals, err := s.store.ListProposals(ctx, name)
	if err != nil {
		return err
	}
	for _, pr := range proposals {
		p.Proposals = append(p.Proposals, proposalView{ID: pr.ID, Proposer: link{Label: pr.Proposer, URL: publisherURL(pr.Proposer)},
			Function: link{Label: pr.Group + "/" + pr.Kind, URL: functionURL(pr.Group, pr.Kind)}, Versions: pr.Versions, ProposedAt: pr.CreatedAt,
			URL: "/api/v1/catalogs/" + url.PathEscape(name) + "/proposals/" + strconv.FormatInt(pr.ID, 10)})
	}
	p.Total = len(fns)
	start := (pageNo - 1) * catalogPageSize
	if start > 0 && start >= len(fns) {
		return store.Errorf(store.ErrNotFound, "version %s of catalog %q has %d functions: there is no page %d", selected, name, len(fns), pageNo)
	}
	p.Functions, p.First = fns[start:min(len(fns), start+catalogPageSize)], start+1
	pageURL := func(n int) string {
		v := url.Values{}
		if r.URL.Query().Get("version") != "" {
			v.Set("version", selected)
		}
		if n > 1 {
			v.Set("page", strconv.Itoa(n))
		}
		if q := v.Encode(); q != "" {
			return catalogURL(name) + "?" + q
		}
		return catalogURL(name)
	}
	if pageNo > 1 {
		p.Prev = pageURL(pageNo - 1)
	}
	if start+catalogPageSize < len(fns) {
		p.Next = pageURL(pageNo + 1)
	}
	base := baseURL(r)
	p.LatestCurl = snippet{ID: "curl-latest", Title: "curl command for the latest version", Text: "curl -fsSL " + base + catalogURL(name) + "/catalog.yaml"}
	p.PinnedCurl = snippet{ID: "curl-pinned", Title: "curl command for this version", Text: "curl -fsSL " + base + p.DocumentURL}
	if len(fns) > 0 && len(fns[0].Versions) > 0 {
		f, doc := fns[0], base+p.DocumentURL
		p.ResolveCmd = snippet{ID: "resolve-cmd", Title: "krm-catalog command trusting this version",
			Text: fmt.Sprintf("krm-catalog resolve --catalog %s \\\n  --trusted-catalog %s \\\n  %s/%s %s", doc, doc, f.Group, f.Versions[0], f.Kind)}
	}
	return s.render(w, r, http.StatusOK, "catalog", page{Title: name + " – catalog", Section: "catalogs", Body: p})
}

// catalogFunctions lists the functions of a published catalog from its bytes: the store indexes
// only current versions, and a catalog page may show an older one. An entry names its function's
// publisher, and the service takes another publisher's function only exactly as published, so an
// entry whose publisher is not the catalog's (publisher) is curated from that publisher.
func catalogFunctions(c store.Content, publisher string) ([]catalogFunction, error) {
	docs, findings := catalog.Decode("catalog.yaml", c.Bytes)
	if findings.HasErrors() || len(docs) != 1 {
		return nil, fmt.Errorf("read catalog %s %s: the stored document does not decode", c.Name, c.Version)
	}
	cat, err := catalog.DecodeCatalog(docs[0])
	if err != nil {
		return nil, fmt.Errorf("read catalog %s %s: %w", c.Name, c.Version, err)
	}
	out := make([]catalogFunction, 0, len(cat.Functions))
	for _, f := range cat.Functions {
		cf := catalogFunction{Group: f.Group, Kind: f.Kind, Description: f.Description, URL: functionURL(f.Group, f.Kind)}
		if f.Publisher != publisher {
			cf.CuratedFrom = &link{Label: f.Publisher, URL: publisherURL(f.Publisher)}
		}
		for _, v := range f.Versions {
			cf.Versions = append(cf.Versions, v.Name)
			for _, k := range v.Runtime.Kinds() {
				if !slices.Contains(cf.Runtimes, k) {
					cf.Runtimes = append(cf.Runtimes, k)
				}
			}
		}
		cf.Versions = sortVersions(cf.Versions)
		out = append(out, cf)
	}
	return out, nil
}

type publisherPage struct {
	Publisher store.Publisher
	Catalogs  []catalogRow
	Table     catalogTable
	Functions []resultCard
	MoreURL   string // the search for all its functions, when the page shows only some
	Keys      []store.Key
	// Identities are the keyless identities (issuer and subject pattern) the publisher registered.
	Identities []store.Identity
	// ByName is the group the publisher's name owns, with those under it; "" if no DNS name.
	ByName string
	Grants []store.Grant
}

// publisherFunctionsShown is how many functions the publisher page lists before linking to search.
const publisherFunctionsShown = 50

func (s *Site) publisher(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	name := chi.URLParam(r, "name")
	pub, err := s.store.GetPublisher(ctx, name)
	if err != nil {
		return err
	}
	cs, err := s.store.PublisherCatalogs(ctx, name)
	if err != nil {
		return err
	}
	fns, err := s.store.PublisherFunctions(ctx, name, publisherFunctionsShown)
	if err != nil {
		return err
	}
	p := publisherPage{Publisher: pub, Catalogs: catalogRows(cs)}
	p.Table = catalogTable{Label: "catalogs-title", Rows: p.Catalogs}
	for _, f := range fns {
		p.Functions = append(p.Functions, card(f, searchParams{}))
	}
	if pub.Functions > len(fns) {
		p.MoreURL = searchParams{Publisher: name}.URL()
	}
	if p.Keys, err = s.store.ListKeys(ctx, name); err != nil {
		return err
	}
	if p.Identities, err = s.store.ListIdentities(ctx, name); err != nil {
		return err
	}
	if p.Grants, err = s.store.ListGrants(ctx, name); err != nil {
		return err
	}
	if identity.ValidateName(name) == nil {
		p.ByName = name
	}
	return s.render(w, r, http.StatusOK, "publisher", page{Title: name + " – publisher", Body: p})
}

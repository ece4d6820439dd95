package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/store"
)

type versionOption struct {
	Name     string
	Selected bool
	URL      string
}

// signatureView is the signature status of the shown version, with words for it.
type signatureView struct {
	Status, Label, Detail string
	// SignedBy names the signer of a verified version, when the service says.
	SignedBy *signerView
}

var signatureWords = map[string]signatureView{
	"verified": {Label: "Signature verified", Detail: "Signed by a key or an identity registered for this publisher."},
	"signed":   {Label: "Signed", Detail: "Signed, but not by a key or an identity registered for this publisher."},
	"unsigned": {Label: "Unsigned", Detail: "No signature was found for this artifact."},
}

// runtimeView describes how the version runs, with every digest that pins it.
type runtimeView struct {
	Kinds     []string
	Container *catalog.ContainerRuntime
	// PinnedImage is the image by digest (image@sha256:...), or the image as written when the
	// catalog gives no digest (Unpinned).
	PinnedImage string
	Unpinned    bool
	Exec        *catalog.ExecRuntime
	Starlark    *catalog.StarlarkRuntime
}

// sourceView is one catalog version or definition that lists the version.
type sourceView struct {
	Label       string
	URL         string // its page
	DocumentURL string // the document as published
	Digest      string
	PublishedAt string
}

// listingView is a catalog that lists the function, in any version, and who curates it there.
type listingView struct {
	Catalog   string
	URL       string
	CuratedBy *link // nil when the catalog is the function's publisher's
	Versions  []string
}

type functionPage struct {
	Group, Kind, APIVersion string
	URL                     string
	Publisher               link
	Description             string
	Home                    string
	Maintainers             []string
	Tags                    []link
	Version                 string
	Versions                []versionOption
	License                 string
	Usage                   string
	Examples                []link
	Idempotent              *bool
	SpecVersions            []string
	Runtime                 runtimeView
	Signature               *signatureView
	Trust                   *trustView
	SchemaDescription       string
	Schema                  []schemaRow
	SchemaTruncated         bool
	HasSchema               bool
	Snippets                []snippet
	Sources                 []sourceView
	DefinitionURL           string
	Owner                   ownerView
	Listings                []listingView
}

// ownerView says who owns a function's group: only the owner may add kinds to it.
type ownerView struct {
	Group string
	Owner link // empty Label: nobody owns the group
	How   string
}

// groupOwner reads who owns group for a page.
func (s *Site) groupOwner(ctx context.Context, group string) (ownerView, error) {
	o, err := s.store.GetGroupOwner(ctx, group)
	if err != nil {
		return ownerView{}, err
	}
	v := ownerView{Group: group}
	if o.Owner != "" {
		v.Owner, v.How = link{Label: o.Owner, URL: publisherURL(o.Owner)}, o.How()
	}
	return v, nil
}

func (s *Site) function(w http.ResponseWriter, r *http.Request) error {
	group, kind := chi.URLParam(r, "group"), chi.URLParam(r, "kind")
	d, err := s.store.GetFunction(r.Context(), group, kind)
	if err != nil {
		return err
	}
	versions := sortVersions(d.Versions)
	selected := r.URL.Query().Get("version")
	if selected == "" && len(versions) > 0 {
		selected = versions[0]
	}
	// The entries come in resolution order (a definition, then catalogs by name). The snippets
	// resolve through a catalog, so the page shows the first catalog's entry when there is one.
	var entries []store.FunctionVersion
	shown := -1
	for _, e := range d.Entries {
		if e.Version != selected {
			continue
		}
		entries = append(entries, e)
		if shown < 0 && e.Source.Catalog != "" {
			shown = len(entries) - 1
		}
	}
	if len(entries) == 0 {
		return store.Errorf(store.ErrNotFound, "function %s/%s has no version %q; it has %s", group, kind, selected, strings.Join(versions, ", "))
	}
	if shown < 0 {
		shown = 0
	}
	e := entries[shown]
	v := decodeVersion(e.Spec)

	base := functionURL(group, kind)
	p := functionPage{
		Group: group, Kind: kind, APIVersion: e.APIVersion, URL: base,
		Publisher:   link{Label: e.Publisher, URL: publisherURL(e.Publisher)},
		Description: e.Description, Home: e.Home, Maintainers: e.Maintainers,
		Version: selected, License: v.License, Usage: v.Usage, Examples: exampleLinks(v.Examples),
		Idempotent: v.Idempotent, SpecVersions: v.ConformWithSpecVersions,
		DefinitionURL: base + "/definition.yaml",
	}
	if len(p.Maintainers) == 0 {
		p.Maintainers = v.Maintainers
	}
	if p.Owner, err = s.groupOwner(r.Context(), group); err != nil {
		return err
	}
	for _, t := range e.Tags {
		p.Tags = append(p.Tags, link{Label: t, URL: searchParams{Tags: []string{t}}.URL()})
	}
	for _, name := range versions {
		p.Versions = append(p.Versions, versionOption{Name: name, Selected: name == selected, URL: base + "?version=" + url.QueryEscape(name)})
	}
	p.Runtime = runtimeOf(v.Runtime)
	if s.signatures != nil {
		s.signatures.AnnotateFunctionVersions(r.Context(), entries[shown:shown+1])
		e = entries[shown]
	}
	// only the statuses the API defines; anything else is not shown rather than guessed at
	if sv, ok := signatureWords[e.Signature]; ok {
		sv.Status = e.Signature
		p.Signature = &sv
	}
	p.Trust = trustOf(e)
	if v.Schema != nil {
		p.HasSchema = true
		p.SchemaDescription = str(v.Schema["description"])
		p.Schema, p.SchemaTruncated = schemaTable(v.Schema)
	}
	for _, src := range entries {
		sv := sourceView{Digest: src.Source.Digest, PublishedAt: src.Source.PublishedAt.UTC().Format("2 Jan 2006")}
		if src.Source.Definition {
			sv.Label, sv.URL, sv.DocumentURL = "Function definition", base+"/definition.yaml", base+"/definition.yaml"
		} else {
			sv.Label = fmt.Sprintf("%s %s", src.Source.Catalog, src.Source.CatalogVersion)
			sv.URL = catalogURL(src.Source.Catalog) + "?version=" + url.QueryEscape(src.Source.CatalogVersion)
			sv.DocumentURL = catalogURL(src.Source.Catalog) + "/" + url.PathEscape(src.Source.CatalogVersion) + "/catalog.yaml"
		}
		p.Sources = append(p.Sources, sv)
	}
	p.Listings = listings(d.Entries)
	raw, _ := e.Spec["runtime"].(map[string]any)
	p.Snippets = snippets(snippetInput{
		Base: baseURL(r), Group: group, Kind: kind, Version: selected, Tags: e.Tags,
		Schema: v.Schema, Runtime: v.Runtime, RawRuntime: raw, Catalog: e.Source.Catalog,
	})
	return s.render(w, r, http.StatusOK, "function", page{Title: kind + " (" + group + ")", Section: "functions", Body: p})
}

// listings are the catalogs among a function's entries, the publisher's first, each with the
// versions it lists.
func listings(entries []store.FunctionVersion) []listingView {
	var out []listingView
	at := map[string]int{}
	for _, e := range entries {
		if e.Source.Catalog == "" {
			continue
		}
		i, ok := at[e.Source.Catalog]
		if !ok {
			i = len(out)
			at[e.Source.Catalog] = i
			l := listingView{Catalog: e.Source.Catalog, URL: catalogURL(e.Source.Catalog)}
			if e.Source.CuratedBy != "" {
				l.CuratedBy = &link{Label: e.Source.CuratedBy, URL: publisherURL(e.Source.CuratedBy)}
			}
			out = append(out, l)
		}
		out[i].Versions = append(out[i].Versions, e.Version)
	}
	for i := range out {
		out[i].Versions = sortVersions(out[i].Versions)
	}
	return out
}

// decodeVersion reads a stored version object with the catalog package's own decoder, so that the
// page reads runtimes exactly as validation and resolution do.
func decodeVersion(spec map[string]any) catalog.Version {
	def, err := catalog.DecodeDefinition(&catalog.Document{Kind: catalog.KindDefinition,
		Value: map[string]any{"spec": map[string]any{"versions": []any{spec}}}})
	if err != nil || len(def.Function.Versions) == 0 {
		return catalog.Version{}
	}
	return def.Function.Versions[0]
}

func runtimeOf(rt catalog.Runtime) runtimeView {
	v := runtimeView{Kinds: rt.Kinds(), Container: rt.Container, Exec: rt.Exec, Starlark: rt.Starlark}
	if c := rt.Container; c != nil {
		v.PinnedImage = c.PinnedImage()
		v.Unpinned = !strings.Contains(v.PinnedImage, "@sha256:")
	}
	return v
}

// exampleLinks names each example after its place in the publisher's tree
// (…/examples/exclude/README.md → "exclude"), or by number.
func exampleLinks(urls []string) []link {
	out := make([]link, 0, len(urls))
	for i, u := range urls {
		label := fmt.Sprintf("Example %d", i+1)
		if pu, err := url.Parse(u); err == nil {
			parts := strings.Split(strings.Trim(pu.Path, "/"), "/")
			for j := len(parts) - 1; j >= 0; j-- {
				name := strings.TrimSuffix(parts[j], ".md")
				if name != "" && !strings.EqualFold(name, "README") && name != "examples" {
					label = name
					break
				}
			}
		}
		out = append(out, link{Label: label, URL: u})
	}
	return out
}

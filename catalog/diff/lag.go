package diff

import (
	"maps"
	"slices"
	"strings"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// CuratedLags is a curated entry behind what its publisher publishes now: a version the publisher
// publishes that the entry lacks, a version whose runtime the publisher has moved, or a version the
// publisher no longer publishes. It is never breaking: the entry still runs what it ran, and
// users see no change until the curator republishes, which must then follow.
const CuratedLags Kind = "curated-lags"

// Published is what a function's publisher publishes now from its own current sources (never a
// curator's copy): by version name, the runtimes those sources list for it (several sources may
// list one version, each with its own runtime).
type Published struct {
	Publisher string
	Versions  map[string][]catalog.Runtime
}

// Lagging compares the entries of c that upstream holds (by function id: the curated ones) with
// what their publishers publish now, in the order of Catalogs: by function, then version. An entry
// that names another publisher than upstream's is a claim, not a reference, and is not compared.
func Lagging(c *catalog.Catalog, upstream map[string]Published) []Change {
	nf := functions(c)
	var out []Change
	for _, id := range slices.Sorted(maps.Keys(nf)) {
		entry := nf[id]
		up, ok := upstream[id]
		if !ok || up.Publisher != entry.publisher {
			continue
		}
		names := slices.Collect(maps.Keys(up.Versions))
		for name := range entry.versions {
			if _, ok := up.Versions[name]; !ok {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			have, listed := entry.versions[name]
			runtimes, published := up.Versions[name]
			c := Change{Kind: CuratedLags, Function: id, Version: name}
			switch {
			case !listed:
				c.New = up.Publisher + " publishes it"
				c.Reason = "lags the owner's version " + name + ": the catalog does not list it"
			case !published:
				c.Old = runtimeSummary(have.Runtime)
				c.Reason = "the owner no longer publishes version " + name + ": the catalog's next version cannot list it"
			case !slices.ContainsFunc(runtimes, func(r catalog.Runtime) bool { return catalog.SameRuntime(r, have.Runtime) }):
				c.Old = runtimeSummary(have.Runtime)
				var now []string
				for _, r := range runtimes {
					now = append(now, runtimeSummary(r))
				}
				c.New = strings.Join(now, " | ")
				c.Reason = "lags the owner's runtime of version " + name
			default:
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

// runtimeSummary names what a runtime runs, each runnable thing as source@digest, in a stable
// order.
func runtimeSummary(r catalog.Runtime) string {
	entries := runtimeEntries(r)
	parts := make([]string, 0, len(entries))
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		e := entries[name]
		s := name + " " + e.source
		if e.digest != "" {
			s += "@" + e.digest
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

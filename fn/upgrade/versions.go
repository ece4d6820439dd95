package upgrade

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// Level is how far one version is from another: the part of the version that changed.
type Level string

// The levels, and the --to values that name them.
const (
	None  Level = ""
	Patch Level = "patch"
	Minor Level = "minor"
	Major Level = "major"
	// Latest is --to latest: any newer version.
	Latest Level = "latest"
)

// ParseLevel reads --to.
func ParseLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case Patch, Minor, Latest:
		return l, nil
	}
	return None, fmt.Errorf("--to must be patch, minor or latest, not %q", s)
}

// rank orders levels: None < Patch < Minor < Major (= Latest).
func (l Level) rank() int {
	switch l {
	case Patch:
		return 1
	case Minor:
		return 2
	case Major, Latest:
		return 3
	}
	return 0
}

// entry is one function version that a trusted catalog lists.
type entry struct {
	res   *resolver.Resolution
	order int // in search order: catalogs in order, then their functions and versions
	// image is the version's container image, its digest from the catalog's sha256 when it gives
	// one; release is its tag read as a version (nil when there is no tag or it is no version)
	image   catalog.ImageRef
	release *semver.Version
}

func (e *entry) id() string { return e.res.Function.ID() }

// pinned is the image reference that runs this version: repository:tag@digest.
func (e *entry) pinned(repo string) string {
	s := repo
	if e.image.Tag != "" {
		s += ":" + e.image.Tag
	}
	return s + "@" + e.image.Digest
}

// index is every function version of the trusted catalogs, looked up by what a step names.
type index struct {
	entries []*entry
	byRepo  map[string][]*entry // image repository
	byBase  map[string][]string // the last element of a repository: the repositories
	byKind  map[string][]*entry // group/Kind
	bySHA   map[string][]*entry // an executable's sha256, any platform
}

// newIndex loads every catalog of the resolver, in search order. A catalog given but not trusted
// is an error: the newest version might be in it, and a comparison that passes over it would say
// something untrue.
func newIndex(ctx context.Context, r *resolver.Resolver) (*index, error) {
	x := &index{byRepo: map[string][]*entry{}, byBase: map[string][]string{}, byKind: map[string][]*entry{}, bySHA: map[string][]*entry{}}
	for _, ref := range r.Refs() {
		cat, err := r.Load(ctx, ref.Raw)
		if err != nil {
			return nil, err
		}
		for _, f := range cat.Functions {
			for _, v := range f.Versions {
				e := &entry{order: len(x.entries), res: &resolver.Resolution{
					APIVersion: f.APIVersion(v), Kind: f.Kind,
					Catalog: ref.Raw, CatalogName: cat.Name, Function: f, Version: v,
				}}
				x.entries = append(x.entries, e)
				x.byKind[f.ID()] = append(x.byKind[f.ID()], e)
				if c := v.Runtime.Container; c != nil {
					if img, err := catalog.ParseImage(c.Image); err == nil {
						if c.SHA256 != "" {
							img.Digest = "sha256:" + strings.TrimPrefix(c.SHA256, "sha256:")
						}
						e.image = img
						if img.Tag != "" {
							e.release, _ = semver.NewVersion(img.Tag)
						}
						if _, seen := x.byRepo[img.Name]; !seen {
							base := path.Base(img.Name)
							x.byBase[base] = append(x.byBase[base], img.Name)
						}
						x.byRepo[img.Name] = append(x.byRepo[img.Name], e)
					}
				}
				if ex := v.Runtime.Exec; ex != nil {
					for _, p := range ex.Platforms {
						if !slices.Contains(x.bySHA[p.SHA256], e) {
							x.bySHA[p.SHA256] = append(x.bySHA[p.SHA256], e)
						}
					}
				}
			}
		}
	}
	return x, nil
}

// expand resolves an image named without a registry or path (set-labels:1.0.0) to the repository
// a trusted catalog lists by that name, as render expands it; the name is returned as written when
// no catalog, or more than one repository, has it.
func (x *index) expand(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	if repos := x.byBase[name]; len(repos) == 1 {
		return repos[0]
	}
	return name
}

// releases are the versions of a repository that can be upgraded to: a tag that is a version
// (a pre-release only when pre is set) and a digest, the first listing of each in search order,
// the newest first.
func releases(list []*entry, pre bool) []*entry {
	var out []*entry
	for _, e := range list {
		if e.release == nil || e.image.Digest == "" || e.release.Prerelease() != "" && !pre {
			continue
		}
		if slices.ContainsFunc(out, func(o *entry) bool { return o.release.Equal(e.release) }) {
			continue
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b *entry) int { return b.release.Compare(a.release) })
	return out
}

// semverLevel is the level of the change from a to b when b is newer, else None.
func semverLevel(a, b *semver.Version) Level {
	switch {
	case a == nil || b == nil || !b.GreaterThan(a):
		return None
	case a.Major() != b.Major():
		return Major
	case a.Minor() != b.Minor():
		return Minor
	}
	return Patch
}

// kubeVersion is a Kubernetes API version (v1, v2beta1, v1alpha3) in the order of Kubernetes'
// version priority: generally available before beta before alpha, then the higher number.
type kubeVersion struct {
	major, stability, minor int // stability: 0 alpha, 1 beta, 2 GA
}

func parseKubeVersion(v string) (kubeVersion, bool) {
	rest, ok := strings.CutPrefix(v, "v")
	if !ok {
		return kubeVersion{}, false
	}
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	major, err := strconv.Atoi(rest[:digits])
	if err != nil || major == 0 || rest[0] == '0' {
		return kubeVersion{}, false
	}
	k := kubeVersion{major: major, stability: 2}
	rest = rest[digits:]
	if rest == "" {
		return k, true
	}
	switch {
	case strings.HasPrefix(rest, "alpha"):
		k.stability, rest = 0, rest[len("alpha"):]
	case strings.HasPrefix(rest, "beta"):
		k.stability, rest = 1, rest[len("beta"):]
	default:
		return kubeVersion{}, false
	}
	minor, err := strconv.Atoi(rest)
	if err != nil || minor == 0 || rest[0] == '0' {
		return kubeVersion{}, false
	}
	k.minor = minor
	return k, true
}

func (a kubeVersion) compare(b kubeVersion) int {
	switch {
	case a.stability != b.stability:
		return a.stability - b.stability
	case a.major != b.major:
		return a.major - b.major
	}
	return a.minor - b.minor
}

// kubeLevel is the level of the change from API version a to b when b comes first in priority:
// another major version is major, any other change (beta to GA, beta1 to beta2) minor.
func kubeLevel(a, b string) Level {
	ka, okA := parseKubeVersion(a)
	kb, okB := parseKubeVersion(b)
	switch {
	case !okA || !okB || kb.compare(ka) <= 0:
		return None
	case ka.major != kb.major:
		return Major
	}
	return Minor
}

// apiVersions are the versions of a function (group/Kind) that a config could name, each as the
// first catalog in search order lists it, in Kubernetes' version priority, the first first.
func apiVersions(list []*entry) []*entry {
	var out []*entry
	for _, e := range list {
		if _, ok := parseKubeVersion(e.res.Version.Name); !ok {
			continue
		}
		if slices.ContainsFunc(out, func(o *entry) bool { return o.res.Version.Name == e.res.Version.Name }) {
			continue
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b *entry) int {
		ka, _ := parseKubeVersion(a.res.Version.Name)
		kb, _ := parseKubeVersion(b.res.Version.Name)
		return kb.compare(ka)
	})
	return out
}

// within reports whether a change of level l is allowed by --to.
func within(l, to Level) bool { return l != None && l.rank() <= to.rank() }

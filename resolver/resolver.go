// Package resolver finds the runtime of a KRM function from its functionConfig: an explicit runtime on
// the config itself, or else the first match of its group, version and kind in an ordered list of
// catalogs (the built-in catalog first). Catalogs are paths, https:// URLs (http:// to this machine;
// cached and revalidated by ETag), git references or oci:// artifacts; each must be trusted (a local
// file in any spelling of its path), and none is fetched until a function needs it (KEP-2906).
package resolver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/cachedir"
)

// Sentinel errors.
var (
	// ErrNotFound: no catalog searched has the function.
	ErrNotFound = errors.New("function not found in any catalog")
	// ErrUntrustedCatalog: a catalog needed for resolution was not named by --trusted-catalog.
	ErrUntrustedCatalog = errors.New("untrusted catalog")
	// ErrInvalidReference: a catalog reference cannot be parsed.
	ErrInvalidReference = errors.New("invalid catalog reference")
	// ErrInvalidCatalog: a fetched catalog does not validate.
	ErrInvalidCatalog = errors.New("invalid catalog")
	// ErrInvalidRuntime: an explicit runtime on a function config is malformed.
	ErrInvalidRuntime = errors.New("invalid runtime")
	// ErrFetch: a catalog could not be fetched.
	ErrFetch = errors.New("cannot fetch catalog")
)

// EnvBuiltin names the built-in catalog at run time; it overrides the one set at build time.
const EnvBuiltin = "KRM_CATALOG_BUILTIN"

// builtinCatalog is the built-in catalog reference set at build time:
//
//	go build -ldflags "-X github.com/krm-catalog/krm-catalog/resolver.builtinCatalog=oci://..." ./cmd/krm-catalog
//
// It is only ever written by the linker.
var builtinCatalog string

// Builtin returns the built-in catalog reference: KRM_CATALOG_BUILTIN when it is set (an empty value
// turns the built-in catalog off), else the one set at build time, else "".
func Builtin(lookupEnv func(string) (string, bool)) string {
	if lookupEnv != nil {
		if v, ok := lookupEnv(EnvBuiltin); ok {
			return strings.TrimSpace(v)
		}
	}
	return builtinCatalog
}

// Options configure a Resolver.
type Options struct {
	// Catalogs are the catalog references, searched in order.
	Catalogs []string
	// Trusted are the references the user trusts (--trusted-catalog): a local catalog in any
	// spelling of its path, any other reference exactly.
	Trusted []string
	// Declared holds, for a local catalog of Catalogs that a Kustomization or Composition lists, the
	// spellings it was declared with there (relative to that file). A Trusted value equal to one of
	// them trusts it too, from any working directory: KEP-2906 has --trusted-catalog take the value
	// the Kustomization declares.
	Declared map[string][]string
	// Builtin is the built-in catalog reference, searched first and trusted; "" for none.
	Builtin string
	// HTTPClient fetches https catalogs; nil uses a client with a 30 s timeout.
	HTTPClient *http.Client
	// CacheDir holds https catalogs with their ETags; "" means the user cache directory
	// (krm-catalog/catalogs under os.UserCacheDir), and "-" disables the cache.
	CacheDir string
	// OCI pulls oci:// catalogs; nil makes oci:// references an error when they are needed.
	OCI CatalogPuller
	// Git is the git binary for git references; "" means git from PATH.
	Git string
	// ShortImagePrefix, when set, completes image names without a slash on both sides of
	// ResolveImage, the image asked for and the catalogs' images, as Porch and kpt complete them
	// (catalog.ImageRef.Completed): "set-labels:v0.2" and PREFIX/set-labels:v0.2 are one image, and
	// an untagged catalog image is its :latest.
	ShortImagePrefix string
}

// Resolver resolves function configs to runtimes. It is safe for concurrent use. Catalogs are
// fetched at most once per Resolver, and only when a resolution needs them.
type Resolver struct {
	refs    []Ref
	builtin int // how many refs at the front are built in (0 or 1)
	trusted map[string]bool
	// declared and trustedAsWritten: Options.Declared, and the Trusted values cleaned, to match them
	declared         map[string][]string
	trustedAsWritten map[string]bool
	https            httpsCache
	git              gitFetcher
	oci              CatalogPuller
	val              *catalog.Validator
	shortImagePrefix string

	mu     sync.Mutex
	loaded map[int]*loaded
}

type loaded struct {
	once sync.Once
	cat  *catalog.Catalog
	err  error
}

// New checks the references and returns a Resolver. Nothing is fetched yet.
func New(o Options) (*Resolver, error) {
	r := &Resolver{
		trusted:          map[string]bool{},
		declared:         o.Declared,
		trustedAsWritten: map[string]bool{},
		https:            httpsCache{client: o.HTTPClient, dir: o.CacheDir},
		git:              gitFetcher{git: o.Git},
		oci:              o.OCI,
		loaded:           map[int]*loaded{},
		shortImagePrefix: o.ShortImagePrefix,
	}
	if r.https.dir == "" {
		r.https.dir = cachedir.Default().Catalogs()
	} else if r.https.dir == "-" {
		r.https.dir = ""
	}
	var errs []error
	if o.Builtin != "" {
		ref, err := ParseRef(o.Builtin)
		if err != nil {
			errs = append(errs, fmt.Errorf("built-in catalog: %w", err))
		} else {
			r.refs = append(r.refs, ref)
			r.builtin = 1
		}
	}
	for _, c := range o.Catalogs {
		ref, err := ParseRef(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.refs = append(r.refs, ref)
	}
	for _, t := range o.Trusted {
		r.trustedAsWritten[filepath.ToSlash(filepath.Clean(t))] = true
		ref, err := ParseRef(t)
		if err != nil {
			// never the key of a catalog given: a malformed --trusted-catalog trusts nothing
			r.trusted[t] = true
			continue
		}
		r.trusted[trustKey(ref)] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// trustKey is what trust is granted to: a local catalog's absolute, cleaned path with its
// symbolic links resolved when it exists, so that ./x/catalog.yaml, x/catalog.yaml and
// /abs/x/catalog.yaml are one catalog; any other reference as written.
func trustKey(ref Ref) string {
	if ref.Kind != RefPath {
		return ref.Raw
	}
	p, err := filepath.Abs(ref.Path)
	if err != nil {
		return ref.Raw
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return "path:" + p
}

// isTrusted reports whether a catalog given was trusted with --trusted-catalog, in any spelling
// of the same catalog, or as a Kustomization that lists it spelled it.
func (r *Resolver) isTrusted(ref Ref) bool {
	if r.trusted[trustKey(ref)] {
		return true
	}
	if ref.Kind != RefPath {
		return false
	}
	for _, w := range r.declared[ref.Raw] {
		if r.trustedAsWritten[filepath.ToSlash(filepath.Clean(w))] {
			return true
		}
	}
	return false
}

// Refs returns the catalogs in search order, the built-in one first.
func (r *Resolver) Refs() []Ref { return append([]Ref(nil), r.refs...) }

// Resolution is where a function's runtime comes from.
type Resolution struct {
	APIVersion, Kind string
	// Explicit is set when the function config names its runtime itself; the fields below are then
	// empty.
	Explicit *Explicit
	// Catalog is the reference of the catalog that provides the function, and CatalogName its
	// metadata.name.
	Catalog     string
	CatalogName string
	Builtin     bool
	Function    catalog.Function
	Version     catalog.Version
}

// Resolve finds the runtime for a function config: an explicit runtime on the config short-circuits
// the catalogs; otherwise the catalogs are searched in order.
func (r *Resolver) Resolve(ctx context.Context, cfg *yaml.RNode) (*Resolution, error) {
	if cfg == nil {
		return nil, errors.New("resolve: no function config")
	}
	apiVersion, kind := cfg.GetApiVersion(), cfg.GetKind()
	e, err := ExplicitRuntime(cfg)
	if err != nil {
		return nil, fmt.Errorf("resolve %s %s: %w", apiVersion, kind, err)
	}
	if e != nil {
		return &Resolution{APIVersion: apiVersion, Kind: kind, Explicit: e}, nil
	}
	return r.ResolveGVK(ctx, apiVersion, kind)
}

// ResolveGVK searches the catalogs, in order, for the function whose group/version and kind match.
// The first match wins, within a catalog too. A catalog is trusted before it is fetched: the first
// untrusted catalog the search reaches is an error naming --trusted-catalog.
func (r *Resolver) ResolveGVK(ctx context.Context, apiVersion, kind string) (*Resolution, error) {
	if apiVersion == "" || kind == "" {
		return nil, fmt.Errorf("resolve: the function config needs apiVersion and kind (got %q, %q)", apiVersion, kind)
	}
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group, version = "", apiVersion
	}
	var searched, hints []string
	for i, ref := range r.refs {
		builtin := i < r.builtin
		if !builtin && !r.isTrusted(ref) {
			as := ref.Raw
			if d := r.declared[ref.Raw]; len(d) > 0 {
				as = d[0] // as its kustomization names it: the same from any directory
			}
			return nil, fmt.Errorf("resolve %s %s: %w %q: trust it with --trusted-catalog %s", apiVersion, kind, ErrUntrustedCatalog, ref.Raw, shellQuote(as))
		}
		cat, err := r.load(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("resolve %s %s: %w", apiVersion, kind, err)
		}
		name := ref.Raw
		if builtin {
			name += " (built-in)"
		}
		searched = append(searched, name)
		for _, f := range cat.Functions {
			if f.Group != group || f.Kind != kind {
				continue
			}
			for _, v := range f.Versions {
				if v.Name == version {
					return &Resolution{
						APIVersion: apiVersion, Kind: kind,
						Catalog: ref.Raw, CatalogName: cat.Name, Builtin: builtin,
						Function: f, Version: v,
					}, nil
				}
			}
			var names []string
			for _, v := range f.Versions {
				names = append(names, v.Name)
			}
			hints = append(hints, fmt.Sprintf("%s has %s/%s in versions %s", ref.Raw, group, kind, strings.Join(names, ", ")))
		}
	}
	if len(searched) == 0 {
		return nil, fmt.Errorf("resolve %s %s: %w: no catalog was given (--catalog) and there is no built-in catalog", apiVersion, kind, ErrNotFound)
	}
	hint := ""
	if len(hints) > 0 {
		hint = " (" + strings.Join(hints, "; ") + ")"
	}
	return nil, fmt.Errorf("resolve %s %s: %w; searched %d catalog(s): %s%s", apiVersion, kind, ErrNotFound, len(searched), strings.Join(searched, ", "), hint)
}

// Load fetches and validates the catalog a reference names, checking trust first (a built-in
// reference is trusted). It is what `catalog view` shows.
func (r *Resolver) Load(ctx context.Context, raw string) (*catalog.Catalog, error) {
	for i, ref := range r.refs {
		if ref.Raw == raw {
			if i >= r.builtin && !r.isTrusted(ref) {
				return nil, fmt.Errorf("%w %q: trust it with --trusted-catalog %s", ErrUntrustedCatalog, raw, shellQuote(raw))
			}
			return r.load(ctx, i)
		}
	}
	return nil, fmt.Errorf("catalog %q is not one of the catalogs given", raw)
}

func (r *Resolver) load(ctx context.Context, i int) (*catalog.Catalog, error) {
	r.mu.Lock()
	l, ok := r.loaded[i]
	if !ok {
		l = &loaded{}
		r.loaded[i] = l
	}
	r.mu.Unlock()
	l.once.Do(func() {
		ref := r.refs[i]
		data, err := r.fetchRef(ctx, ref)
		if err != nil {
			l.err = fmt.Errorf("%w %s: %w", ErrFetch, ref.Raw, err)
			return
		}
		l.cat, l.err = r.decode(ref.Raw, data)
	})
	return l.cat, l.err
}

// decode validates a fetched catalog and reads its functions. A catalog with validation errors is
// refused: it might pin nothing, or say something other than what its author meant.
func (r *Resolver) decode(name string, data []byte) (*catalog.Catalog, error) {
	marker := r.validatedMarker(data)
	if marker != "" {
		if _, err := os.Stat(marker); err == nil {
			// this krm-catalog validated these very bytes before; compiling the schemas again
			// would cost more than the rest of a run
			docs, findings := catalog.Decode(name, data)
			if !findings.HasErrors() {
				for _, d := range docs {
					if d.Kind == catalog.KindCatalog || d.Kind == catalog.KindCatalogShort {
						return catalog.DecodeCatalog(d)
					}
				}
			}
		}
	}
	cat, err := r.validate(name, data)
	if err == nil && marker != "" {
		if os.MkdirAll(filepath.Dir(marker), 0o755) == nil {
			_ = os.WriteFile(marker, nil, 0o644)
		}
	}
	return cat, err
}

// validatedMarker names the file that records that this executable validated these catalog bytes:
// the sha256 of the bytes, and the size and modification time of the executable (a new
// krm-catalog may validate differently). "" when there is no cache.
func (r *Resolver) validatedMarker(data []byte) string {
	if r.https.dir == "" {
		return ""
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	st, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	h := sha256.New()
	h.Write(data)
	fmt.Fprintf(h, "\x00%s\x00%d\x00%d", exe, st.Size(), st.ModTime().UnixNano())
	return filepath.Join(r.https.dir, "validated", hex.EncodeToString(h.Sum(nil)))
}

func (r *Resolver) validate(name string, data []byte) (*catalog.Catalog, error) {
	r.mu.Lock()
	if r.val == nil {
		v, err := catalog.NewValidator()
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		r.val = v
	}
	val := r.val
	r.mu.Unlock()
	docs, findings := val.Validate(name, data, catalog.Options{})
	var cat *catalog.Catalog
	for _, d := range docs {
		if d.Kind == catalog.KindCatalog || d.Kind == catalog.KindCatalogShort {
			cat, _ = catalog.DecodeCatalog(d)
			break
		}
	}
	tolerated := repeatedVersions(cat)
	var errs []string
	for _, f := range findings {
		if f.Severity == catalog.SeverityError && !tolerated[f.Pointer] {
			errs = append(errs, f.String())
		}
	}
	if len(errs) > 0 {
		if len(errs) > 5 {
			errs = append(errs[:5], fmt.Sprintf("and %d more", len(errs)-5))
		}
		return nil, fmt.Errorf("%w %s:\n  %s", ErrInvalidCatalog, name, strings.Join(errs, "\n  "))
	}
	if cat == nil {
		return nil, fmt.Errorf("%w %s: no %s document in it", ErrInvalidCatalog, name, catalog.KindCatalog)
	}
	return cat, nil
}

// repeatedVersions returns the pointers (.../versions/N/name) of function versions that an earlier
// entry of the catalog already defines. `validate` reports them as errors to the catalog's author,
// but KEP-2906 defines what they mean for resolution (the first definition wins), so they do not
// stop a catalog from being used.
func repeatedVersions(cat *catalog.Catalog) map[string]bool {
	out := map[string]bool{}
	if cat == nil {
		return out
	}
	seen := map[string]int{}
	for i, f := range cat.Functions {
		for j, v := range f.Versions {
			key := f.Group + "/" + f.Kind + "/" + v.Name
			if first, dup := seen[key]; dup && first != i {
				out[fmt.Sprintf("%s/versions/%d/name", f.Pointer, j)] = true
				continue
			}
			seen[key] = i
		}
	}
	return out
}

// shellQuote quotes a reference for a command line the user can copy.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:@=+,", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

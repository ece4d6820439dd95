package resolver

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/lazyre"
	"github.com/krm-catalog/krm-catalog/internal/loopback"
)

// RefKind is how a catalog is fetched.
type RefKind int

// The kinds of catalog reference.
const (
	RefPath RefKind = iota // a file on disk
	RefURL                 // https://host/path/catalog.yaml, or http:// to this machine
	RefGit                 // git::<repo url>//<path in repo>?ref=<ref>
	RefOCI                 // oci://registry/repository:tag or @sha256:...
)

func (k RefKind) String() string {
	return [...]string{"path", "url", "git", "oci"}[k]
}

// Ref is a parsed catalog reference.
type Ref struct {
	// Raw is the reference exactly as the user wrote it, for messages; trust goes by trustKey.
	Raw  string
	Kind RefKind
	// Path is the file (RefPath) or the file inside the repository (RefGit).
	Path string
	// URL is the catalog's URL (RefURL) or the repository URL (RefGit).
	URL string
	// GitRef is the branch, tag or commit of a git reference; empty means the remote's HEAD.
	GitRef string
	// OCI is the artifact reference without the oci:// scheme (RefOCI).
	OCI string
}

func (r Ref) String() string { return r.Raw }

// defaultGitPath is the file read from a repository when a git reference names none.
const defaultGitPath = "catalog.yaml"

// ParseRef parses a catalog reference: a path, an https:// URL, a git reference in the form
// kustomize uses for remote resources (git::<url>//<path>?ref=<ref>), or oci://<reference>. Plain
// http:// is refused, since a catalog decides what runs, except to this machine (localhost, a
// loopback address), where nothing is in transit to intercept: the same rule as registries.
func ParseRef(s string) (Ref, error) {
	r := Ref{Raw: s}
	switch {
	case strings.TrimSpace(s) == "":
		return r, fmt.Errorf("%w: empty catalog reference", ErrInvalidReference)
	case strings.ContainsAny(s, "\x00\n\r"):
		return r, fmt.Errorf("%w: %q contains a control character", ErrInvalidReference, s)
	case strings.HasPrefix(s, "git::"):
		return parseGitRef(s)
	case strings.HasPrefix(s, "oci://"):
		r.Kind, r.OCI = RefOCI, strings.TrimPrefix(s, "oci://")
		if _, err := catalog.ParseImage(r.OCI); err != nil {
			return r, fmt.Errorf("%w: %q: %v", ErrInvalidReference, s, err)
		}
		return r, nil
	case strings.HasPrefix(s, "https://"), strings.HasPrefix(s, "http://") && loopback.Is(hostOf(s)):
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return r, fmt.Errorf("%w: %q is not a valid URL", ErrInvalidReference, s)
		}
		if u.User != nil {
			return r, fmt.Errorf("%w: %q carries credentials in the URL; catalogs over https are read anonymously", ErrInvalidReference, s)
		}
		r.Kind, r.URL = RefURL, s
		return r, nil
	case strings.HasPrefix(s, "http://"):
		return r, fmt.Errorf("%w: %q uses plain http to another machine; a catalog decides what runs, so fetch it over https (plain http is for localhost and loopback addresses)", ErrInvalidReference, s)
	case strings.Contains(s, "://"):
		return r, fmt.Errorf("%w: %q: a catalog is a path, an https:// URL, a git::<url>//<path>?ref=<ref> reference or an oci:// reference", ErrInvalidReference, s)
	}
	r.Kind, r.Path = RefPath, s
	return r, nil
}

// hostOf is the host[:port] of an http(s) URL, "" when it has none.
func hostOf(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Host
}

// scpLike is git's short ssh form, [user@]host:path; the path may not start with ':' (ext::).
var scpLike = lazyre.New(`^([A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+:[^:]`)

// parseGitRef parses git::<repo>//<path>?ref=<ref>. The repository URL is https://, ssh://, git://,
// file:// or scp-like (user@host:path); "//" after the URL's own "://" separates the file path.
func parseGitRef(s string) (Ref, error) {
	r := Ref{Raw: s, Kind: RefGit}
	rest := strings.TrimPrefix(s, "git::")
	bad := func(format string, args ...any) (Ref, error) {
		return r, fmt.Errorf("%w: git reference %q: %s", ErrInvalidReference, s, fmt.Sprintf(format, args...))
	}
	if q := strings.LastIndexByte(rest, '?'); q >= 0 {
		query, err := url.ParseQuery(rest[q+1:])
		if err != nil {
			return bad("query: %v", err)
		}
		rest = rest[:q]
		for k, vs := range query {
			switch k {
			case "ref", "version":
				if len(vs) != 1 || vs[0] == "" || (r.GitRef != "" && r.GitRef != vs[0]) {
					return bad("give one non-empty ref")
				}
				r.GitRef = vs[0]
			default:
				return bad("unknown query parameter %q (only ref is understood)", k)
			}
		}
	}
	if strings.HasPrefix(r.GitRef, "-") || strings.ContainsAny(r.GitRef, " ~^:\\") || strings.Contains(r.GitRef, "..") {
		return bad("ref %q is not a valid git ref", r.GitRef)
	}
	schemeEnd := 0
	if i := strings.Index(rest, "://"); i >= 0 {
		scheme := rest[:i]
		switch scheme {
		case "https", "ssh", "git", "file":
		case "http":
			return bad("plain http; use https")
		default:
			return bad("unsupported transport %q (https, ssh, git and file are)", scheme)
		}
		schemeEnd = i + 3
	}
	repo, file := rest, ""
	if i := strings.Index(rest[schemeEnd:], "//"); i >= 0 {
		repo, file = rest[:schemeEnd+i], rest[schemeEnd+i+2:]
	}
	if strings.ContainsAny(repo, " \t") {
		return bad("the repository URL contains white space")
	}
	if schemeEnd == 0 && !scpLike().MatchString(repo) {
		return bad("the repository must be a URL (https://, ssh://, git://, file://) or user@host:path")
	}
	if repo == "" || strings.HasPrefix(repo, "-") || repo[schemeEnd:] == "" {
		return bad("no repository")
	}
	if file == "" {
		file = defaultGitPath
	}
	clean := path.Clean(file)
	if path.IsAbs(file) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
		return bad("path %q must be a file inside the repository", file)
	}
	r.URL, r.Path = repo, clean
	return r, nil
}

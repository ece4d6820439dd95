package catalog

import (
	"errors"
	// The digest package needs the sha256 implementation registered to accept sha256 digests.
	_ "crypto/sha256"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/krm-catalog/krm-catalog/internal/lazyre"
	"github.com/krm-catalog/krm-catalog/internal/loopback"

	"golang.org/x/mod/semver"
)

// ImageRef is a parsed container image reference.
type ImageRef struct {
	Name   string // repository, with its registry host if any
	Tag    string
	Digest string // "sha256:<hex>", when pinned
}

// Completed is the reference as Porch and kpt complete an image before they run it: a name without
// a slash gets prefix in front ("set-labels:v0.2" is prefix/set-labels:v0.2; no change when prefix
// is ""), and a reference with neither tag nor digest gets the tag "latest".
func (r ImageRef) Completed(prefix string) ImageRef {
	if prefix = strings.TrimRight(prefix, "/"); prefix != "" && !strings.Contains(r.Name, "/") {
		r.Name = prefix + "/" + r.Name
	}
	if r.Tag == "" && r.Digest == "" {
		r.Tag = "latest"
	}
	return r
}

// String writes the reference back: name[:tag][@digest].
func (r ImageRef) String() string {
	s := r.Name
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Errors of ParseImage, worded as distribution/reference words them.
var (
	errRefFormat    = errors.New("invalid reference format")
	errRefUppercase = errors.New("repository name must be lowercase")
	errRefEmpty     = errors.New("repository name must have at least one component")
	errRefTooLong   = errors.New("repository name must not be more than 255 characters")
)

// ParseImage parses an image reference: name, name:tag, name@sha256:..., or name:tag@sha256:....
//
// It accepts what distribution/reference's Parse accepts, with its error messages
// (FuzzParseImage holds it to that package), but by hand: that package compiles a dozen regular
// expressions when the program starts, which every krm-catalog command paid.
func ParseImage(s string) (ImageRef, error) {
	ref, err := parseImage(s)
	if errors.Is(err, errRefFormat) && s != "" {
		if _, lowerErr := parseImage(strings.ToLower(s)); lowerErr == nil || !errors.Is(lowerErr, errRefFormat) {
			err = errRefUppercase
		}
	}
	if err != nil {
		return ImageRef{}, fmt.Errorf("invalid image reference %q: %w", s, err)
	}
	return ref, nil
}

// parseImage follows the grammar of distribution/reference:
//
//	reference := name [ ":" tag ] [ "@" digest ]
//	name      := [ domain "/" ] path-component [ "/" path-component ]*
func parseImage(s string) (ImageRef, error) {
	if s == "" {
		return ImageRef{}, errRefEmpty
	}
	var out ImageRef
	rest := s
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		rest, out.Digest = rest[:i], rest[i+1:]
		if !isDigestSyntax(out.Digest) {
			return ImageRef{}, errRefFormat
		}
	}
	// a colon after the last slash starts the tag: a name holds colons only in its domain's port
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		rest, out.Tag = rest[:i], rest[i+1:]
		if !isTag(out.Tag) {
			return ImageRef{}, errRefFormat
		}
	}
	out.Name = rest
	path := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 && isDomain(rest[:i]) && isRemoteName(rest[i+1:]) {
		path = rest[i+1:]
	} else if !isRemoteName(rest) {
		return ImageRef{}, errRefFormat
	}
	if len(path) > 255 {
		return ImageRef{}, errRefTooLong
	}
	if out.Digest != "" {
		d, err := digest.Parse(out.Digest)
		if err != nil {
			return ImageRef{}, err
		}
		out.Digest = d.String()
	}
	return out, nil
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
func isAlnum(c byte) bool      { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }
func isWord(c byte) bool       { return isAlnum(c) || c == '_' }
func isHex(c byte) bool        { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// isRemoteName: path components separated by "/".
func isRemoteName(s string) bool {
	for _, c := range strings.Split(s, "/") {
		if !isPathComponent(c) {
			return false
		}
	}
	return true
}

// isPathComponent: [a-z0-9]+ runs joined by one separator: ".", "_", "__" or any run of "-".
func isPathComponent(s string) bool {
	if s == "" || !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); {
		if isLowerAlnum(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && !isLowerAlnum(s[j]) {
			j++
		}
		switch sep := s[i:j]; {
		case sep == "." || sep == "_" || sep == "__":
		case strings.Trim(sep, "-") == "":
		default:
			return false
		}
		i = j
	}
	return true
}

// isDomain: a host (DNS name, or [IPv6] address) with an optional :port.
func isDomain(s string) bool {
	host := s
	if i := strings.LastIndexByte(s, ':'); i >= 0 && (s[0] != '[' || i > strings.IndexByte(s, ']')) {
		port := s[i+1:]
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = s[:i]
	}
	if strings.HasPrefix(host, "[") {
		addr, ok := strings.CutSuffix(host[1:], "]")
		return ok && addr != "" && strings.Trim(addr, "0123456789abcdefABCDEF:") == ""
	}
	for _, c := range strings.Split(host, ".") {
		if c == "" || !isAlnum(c[0]) || !isAlnum(c[len(c)-1]) {
			return false
		}
		for i := 0; i < len(c); i++ {
			if !isAlnum(c[i]) && c[i] != '-' {
				return false
			}
		}
	}
	return true
}

// isTag: [\w][\w.-]{0,127}.
func isTag(s string) bool {
	if s == "" || len(s) > 128 || !isWord(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isWord(s[i]) && s[i] != '.' && s[i] != '-' {
			return false
		}
	}
	return true
}

// isDigestSyntax: algorithm components [A-Za-z][A-Za-z0-9]* joined by one of "-_+.", a colon,
// and at least 32 hex digits. Whether the algorithm is known is go-digest's to say.
func isDigestSyntax(s string) bool {
	alg, hexPart, ok := strings.Cut(s, ":")
	if !ok || len(hexPart) < 32 {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		if !isHex(hexPart[i]) {
			return false
		}
	}
	atStart := true
	for i := 0; i < len(alg); i++ {
		c := alg[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			atStart = false
		case '0' <= c && c <= '9' && !atStart:
		case strings.IndexByte("-_+.", c) >= 0 && !atStart:
			atStart = true
		default:
			return false
		}
	}
	return !atStart
}

// Semver returns v as a semantic version with a leading v ("1.2.3" → "v1.2.3"), or "" when v is
// not one: MAJOR.MINOR.PATCH with an optional pre-release and build (semver.org), with or without
// a leading v. The one definition of a semantic version for tags and catalog versions alike.
func Semver(v string) string {
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if !semver.IsValid(v) {
		return ""
	}
	// golang.org/x/mod/semver also takes the shorthands v1 and v1.2; tags and versions are whole
	core, _, _ := strings.Cut(v, "-")
	core, _, _ = strings.Cut(core, "+")
	if strings.Count(core, ".") != 2 {
		return ""
	}
	return v
}

// IsSemverTag reports whether an image tag is a semantic version (v1.2.3, 1.2.3-rc.1), the case in
// which the KEP requires a digest.
func IsSemverTag(tag string) bool { return Semver(tag) != "" }

// checkHTTPURL returns why s is not an absolute http(s) URL, or "".
func checkHTTPURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not a URL: %v", s, strings.TrimPrefix(err.Error(), "parse "+fmt.Sprintf("%q", s)+": "))
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("%q is not an absolute http(s) URL", s)
	case u.Host == "":
		return fmt.Sprintf("%q has no host", s)
	}
	return ""
}

// checkFetchURI returns why s cannot serve as the location of a runtime artifact: an https URL, an
// oci:// reference, or plain http to this machine (localhost, a loopback address), as catalogs are
// fetched. Plain http elsewhere is refused: what it serves could be swapped on the way; on this
// machine nothing is in transit and the sha256 pin carries integrity.
func checkFetchURI(s string) string {
	if rest, ok := strings.CutPrefix(s, "oci://"); ok {
		if _, err := ParseImage(rest); err != nil {
			return fmt.Sprintf("%q is not a valid oci:// reference: %v", s, unwrapRefErr(err))
		}
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not a URL", s)
	case u.Scheme == "http" && !loopback.Is(u.Host):
		return fmt.Sprintf("%q uses plain http to another machine; use https or oci:// so the download cannot be altered in transit (plain http is for localhost and loopback addresses)", s)
	case u.Scheme == "http":
	case u.Scheme != "https":
		return fmt.Sprintf("%q must be an https:// URL or an oci:// reference", s)
	case u.Host == "":
		return fmt.Sprintf("%q has no host", s)
	}
	return ""
}

func unwrapRefErr(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// ociDigest returns the digest of an oci:// URI or bare OCI reference pinned by digest, or "".
func ociDigest(s string) string {
	ref, err := ParseImage(strings.TrimPrefix(s, "oci://"))
	if err != nil {
		return ""
	}
	return ref.Digest
}

// checkBinPath returns why bin is not a safe relative path inside an archive, or "".
func checkBinPath(bin string) string {
	if strings.HasPrefix(bin, "/") || strings.Contains(bin, `\`) {
		return fmt.Sprintf("bin %q must be a relative path with forward slashes", bin)
	}
	for _, part := range strings.Split(bin, "/") {
		if part == ".." {
			return fmt.Sprintf("bin %q must not leave its directory (..)", bin)
		}
	}
	if path.Clean(bin) == "." {
		return "bin must name a file"
	}
	return ""
}

var spdxToken = lazyre.New(`^(\(|\)|AND|OR|WITH|[A-Za-z0-9][A-Za-z0-9.+-]*:?[A-Za-z0-9.+-]*)$`)

// checkLicense returns why s is not an SPDX license expression, or "". The KEP's "Apache 2.0" is accepted.
func checkLicense(s string) string {
	if s == "Apache 2.0" {
		return ""
	}
	bad := func() string {
		return fmt.Sprintf("license %q is not an SPDX license expression (such as Apache-2.0, or MIT OR Apache-2.0)", s)
	}
	tokens := strings.Fields(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(s))
	depth, wantOperand := 0, true
	for _, t := range tokens {
		if !spdxToken().MatchString(t) {
			return bad()
		}
		switch t {
		case "(":
			if !wantOperand {
				return bad()
			}
			depth++
		case ")":
			if wantOperand || depth == 0 {
				return bad()
			}
			depth--
		case "AND", "OR", "WITH":
			if wantOperand {
				return bad()
			}
			wantOperand = true
		default:
			if !wantOperand {
				return bad()
			}
			wantOperand = false
		}
	}
	if wantOperand || depth != 0 {
		return bad()
	}
	return ""
}

package catalog

import (
	// The digest package needs the sha256 implementation registered to accept sha256 digests.
	_ "crypto/sha256"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/distribution/reference"
)

// ImageRef is a parsed container image reference.
type ImageRef struct {
	Name   string // repository, with its registry host if any
	Tag    string
	Digest string // "sha256:<hex>", when pinned
}

// ParseImage parses an image reference: name, name:tag, name@sha256:..., or name:tag@sha256:....
func ParseImage(s string) (ImageRef, error) {
	ref, err := reference.Parse(s)
	if err != nil {
		return ImageRef{}, fmt.Errorf("invalid image reference %q: %w", s, err)
	}
	named, ok := ref.(reference.Named)
	if !ok {
		return ImageRef{}, fmt.Errorf("invalid image reference %q: no repository name", s)
	}
	out := ImageRef{Name: named.Name()}
	if t, ok := ref.(reference.Tagged); ok {
		out.Tag = t.Tag()
	}
	if d, ok := ref.(reference.Digested); ok {
		out.Digest = d.Digest().String()
	}
	return out, nil
}

var semverTag = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// IsSemverTag reports whether an image tag is a semantic version (v1.2.3, 1.2.3-rc.1), the case in
// which the KEP requires a digest.
func IsSemverTag(tag string) bool { return semverTag.MatchString(tag) }

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

// checkFetchURI returns why s cannot serve as the location of a runtime artifact: an https URL or an
// oci:// reference. Plain http is refused: what it serves could be swapped on the way.
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
	case u.Scheme == "http":
		return fmt.Sprintf("%q uses plain http; use https or oci:// so the download cannot be altered in transit", s)
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

var spdxToken = regexp.MustCompile(`^(\(|\)|AND|OR|WITH|[A-Za-z0-9][A-Za-z0-9.+-]*:?[A-Za-z0-9.+-]*)$`)

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
		if !spdxToken.MatchString(t) {
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

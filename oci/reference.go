package oci

import (
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"
)

// Reference names a repository and optionally a tag or a digest: registry.example.com/repo:tag,
// registry.example.com/repo@sha256:..., or either with an oci:// prefix.
type Reference struct {
	Registry   string // host[:port]
	Repository string
	Tag        string
	Digest     digest.Digest
}

// ParseReference parses a reference. The registry host is required: krm-catalog has no default
// registry, so a short name such as "alpine" is an error rather than a guess.
func ParseReference(s string) (Reference, error) {
	raw := strings.TrimPrefix(s, "oci://")
	// oras-go drops the tag of name:tag@digest; keep it for display and for signing payloads.
	var tag string
	if at := strings.Index(raw, "@"); at >= 0 {
		name := raw[:at]
		if colon := strings.LastIndex(name, ":"); colon > strings.LastIndex(name, "/") {
			tag = name[colon+1:]
		}
	}
	r, err := registry.ParseReference(raw)
	if err != nil {
		return Reference{}, fmt.Errorf("%w %q: %v", ErrInvalidReference, s, trimOrasErr(err))
	}
	if !strings.Contains(raw, "/") {
		return Reference{}, fmt.Errorf("%w %q: a reference needs a registry host and a repository, as in registry.example.com/name:tag", ErrInvalidReference, s)
	}
	out := Reference{Registry: r.Registry, Repository: r.Repository}
	if d, err := r.Digest(); err == nil {
		out.Digest, out.Tag = d, tag
	} else {
		out.Tag = r.Reference
	}
	return out, nil
}

func trimOrasErr(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// Name is registry/repository.
func (r Reference) Name() string { return r.Registry + "/" + r.Repository }

// String renders the reference with its tag and digest, when present.
func (r Reference) String() string {
	s := r.Name()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest.String()
	}
	return s
}

// WithDigest returns the reference pinned to d, keeping its tag for display.
func (r Reference) WithDigest(d digest.Digest) Reference {
	r.Digest = d
	return r
}

// target is what the registry is asked for: the digest when there is one, else the tag.
func (r Reference) target() string {
	if r.Digest != "" {
		return r.Digest.String()
	}
	return r.Tag
}

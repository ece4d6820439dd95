package oci

import (
	"fmt"
	"runtime"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ParsePlatform parses os/arch or os/arch/variant, as in linux/amd64 or linux/arm/v7.
func ParsePlatform(s string) (ocispec.Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return ocispec.Platform{}, fmt.Errorf("platform %q: expected os/arch or os/arch/variant", s)
	}
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, " =\t") {
			return ocispec.Platform{}, fmt.Errorf("platform %q: expected os/arch or os/arch/variant", s)
		}
	}
	p := ocispec.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// PlatformString renders a platform as os/arch[/variant].
func PlatformString(p ocispec.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// CurrentPlatform is the platform this program runs on.
func CurrentPlatform() ocispec.Platform {
	return ocispec.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
}

// matchPlatform picks the manifest for want from an index's entries. A variant is compared only
// when want names one.
func matchPlatform(manifests []ocispec.Descriptor, want ocispec.Platform) (ocispec.Descriptor, error) {
	var have []string
	for _, m := range manifests {
		if m.Platform == nil {
			continue
		}
		have = append(have, PlatformString(*m.Platform))
		if m.Platform.OS == want.OS && m.Platform.Architecture == want.Architecture &&
			(want.Variant == "" || m.Platform.Variant == want.Variant) {
			return m, nil
		}
	}
	if len(have) == 0 {
		return ocispec.Descriptor{}, fmt.Errorf("%w %s: the index names no platforms", ErrNoPlatform, PlatformString(want))
	}
	return ocispec.Descriptor{}, fmt.Errorf("%w %s: it has %s", ErrNoPlatform, PlatformString(want), strings.Join(have, ", "))
}

package kpt

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// ErrNoMatchingTag: no version of a step's image satisfies its tag constraint.
var ErrNoMatchingTag = errors.New("no version matches the tag constraint")

// TagLister lists the tags of an image repository in a registry; render asks it only for an image
// that no trusted catalog lists.
type TagLister interface {
	Tags(ctx context.Context, repo string) ([]string, error)
}

// taggedImage is what a step's image and tag resolve to.
type taggedImage struct {
	// Image is the image to run and to show in the render status: repository:version, with
	// @sha256:digest when a catalog pins it.
	Image string
	// Catalog is the trusted catalog's function version that pins Image, or nil.
	Catalog *resolver.Resolution
}

// resolveTag resolves a step's image and tag the way kpt does (an exact version or a tag that is
// no constraint is used as the tag; a semver constraint picks the highest matching version), but
// against the versions the trusted catalogs list for the image's repository, each pinned by
// digest, without asking a registry. Only when no trusted catalog lists the repository at all are
// the registry's tags listed (tags may be nil: then that is an error).
func resolveTag(ctx context.Context, r *resolver.Resolver, tags TagLister, image, tag string) (*taggedImage, error) {
	ref, err := catalog.ParseImage(image)
	if err != nil {
		return nil, err
	}
	repo := ref.Name
	if _, err := semver.NewVersion(tag); err == nil {
		return &taggedImage{Image: repo + ":" + tag}, nil
	}
	constraint, err := semver.NewConstraint(tag)
	if err != nil {
		return &taggedImage{Image: repo + ":" + tag}, nil
	}
	listed, err := catalogVersions(ctx, r, repo)
	if err != nil {
		return nil, err
	}
	if len(listed) > 0 {
		var best *catalogVersion
		for _, c := range listed {
			if c.version != nil && constraint.Check(c.version) && (best == nil || c.version.GreaterThan(best.version)) {
				best = c
			}
		}
		if best == nil {
			return nil, fmt.Errorf("%w: %s %q: the trusted catalogs list %s", ErrNoMatchingTag, repo, tag, versionList(listed))
		}
		return &taggedImage{Image: repo + ":" + best.tag + "@sha256:" + best.digest, Catalog: best.res}, nil
	}
	if tags == nil {
		return nil, fmt.Errorf("%w: %s %q: no trusted catalog lists the image, and no registry to ask", ErrNoMatchingTag, repo, tag)
	}
	all, err := tags.Tags(ctx, repo)
	if err != nil {
		return nil, err
	}
	var best *semver.Version
	for _, t := range all {
		// kpt skips signature and git-build tags
		if strings.HasPrefix(t, "sha256-") || strings.Contains(t, "-git-") {
			continue
		}
		v, err := semver.NewVersion(t)
		if err == nil && constraint.Check(v) && (best == nil || v.GreaterThan(best)) {
			best = v
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: %s %q: none of the registry's %d tags", ErrNoMatchingTag, repo, tag, len(all))
	}
	return &taggedImage{Image: repo + ":" + best.Original()}, nil
}

type catalogVersion struct {
	tag, digest string
	version     *semver.Version // nil when the tag is no version
	res         *resolver.Resolution
}

// catalogVersions lists the container images of repo that the trusted catalogs list with a tag and
// a digest (the built-in catalog and those named by --trusted-catalog; untrusted ones are not
// fetched).
func catalogVersions(ctx context.Context, r *resolver.Resolver, repo string) ([]*catalogVersion, error) {
	if r == nil {
		return nil, nil
	}
	images, err := r.Images(ctx)
	if err != nil {
		return nil, fmt.Errorf("look for image %s in the catalogs: %w", repo, err)
	}
	var out []*catalogVersion
	for _, img := range images {
		if img.Ref.Name != repo || img.Ref.Tag == "" || img.Ref.Digest == "" {
			continue
		}
		cv := &catalogVersion{tag: img.Ref.Tag, digest: strings.TrimPrefix(img.Ref.Digest, "sha256:"), res: img.Resolution}
		if sv, err := semver.NewVersion(img.Ref.Tag); err == nil {
			cv.version = sv
		}
		out = append(out, cv)
	}
	return out, nil
}

func versionList(vs []*catalogVersion) string {
	tags := make([]string, 0, len(vs))
	for _, v := range vs {
		tags = append(tags, v.tag)
	}
	slices.Sort(tags)
	return strings.Join(slices.Compact(tags), ", ")
}

// expandShort resolves an image named without a registry or path (set-labels:latest) to the
// repository a trusted catalog lists by that name, keeping the tag or digest: kpt expands such a
// name to its own function registry, krm-catalog to what the catalogs the user trusts list. With
// no catalog listing the name the image is returned as written (the engine decides where it comes
// from); with two repositories of that name, which one is meant is unclear, and that is an error.
func expandShort(ctx context.Context, r *resolver.Resolver, image string) (string, error) {
	ref, err := catalog.ParseImage(image)
	if err != nil || strings.Contains(ref.Name, "/") || r == nil {
		return image, nil
	}
	repo := ref.Name
	images, err := r.Images(ctx)
	if err != nil {
		return "", fmt.Errorf("look for image %s in the catalogs: %w", image, err)
	}
	found := map[string]bool{}
	for _, img := range images {
		if path.Base(img.Ref.Name) == repo {
			found[img.Ref.Name] = true
		}
	}
	switch len(found) {
	case 0:
		return image, nil
	case 1:
		for full := range found {
			return full + strings.TrimPrefix(image, repo), nil
		}
	}
	names := make([]string, 0, len(found))
	for full := range found {
		names = append(names, full)
	}
	slices.Sort(names)
	return "", fmt.Errorf("image %s: the trusted catalogs list %s: name one", image, strings.Join(names, " and "))
}

// ExpandShortImage is how render completes a step's image named without a registry or path
// (expandShort), for the commands that take an image as kpt's fn eval does.
func ExpandShortImage(ctx context.Context, r *resolver.Resolver, image string) (string, error) {
	return expandShort(ctx, r, image)
}

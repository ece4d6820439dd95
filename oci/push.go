package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// File is one file of an artifact.
type File struct {
	// Path is read when Data is nil.
	Path string
	Data []byte
	// Title is the file's name in the artifact (org.opencontainers.image.title), which pull
	// writes it under; the base name of Path when empty.
	Title string
	// Platform is the os/arch of an exec binary; exec artifacts need it, others must not set it.
	Platform *ocispec.Platform
}

func (f File) title() string {
	if f.Title != "" {
		return f.Title
	}
	return filepath.Base(f.Path)
}

// PushOptions describe an artifact to push.
type PushOptions struct {
	Kind  Kind
	Files []File
	// Title, Version and Source become the manifest's org.opencontainers.image.* annotations;
	// Title defaults to the first file's title, empty Version and Source are left out.
	Title, Version, Source string
	// Created is the org.opencontainers.image.created annotation; zero means now. Setting it (from
	// SOURCE_DATE_EPOCH) makes the manifest digest reproducible.
	Created time.Time
}

// PushResult is what was pushed.
type PushResult struct {
	// Reference is the reference pushed to, pinned to the digest.
	Reference  Reference
	Descriptor ocispec.Descriptor
	Kind       Kind
	// Platforms are the per-platform manifests of an exec artifact's index.
	Platforms []ocispec.Descriptor
}

// Push uploads an artifact to ref (a repository, optionally with a tag) and returns the digest of
// its manifest, or of its index for exec artifacts. Blobs the registry already has are not sent.
func (c *Client) Push(ctx context.Context, ref string, opts PushOptions) (PushResult, error) {
	res, err := c.push(ctx, ref, opts)
	if err != nil {
		return PushResult{}, fmt.Errorf("push %s: %w", ref, err)
	}
	return res, nil
}

// PushCatalog pushes the bytes of a catalog, exactly as given, to ref (the service uses
// PREFIX/catalogs/NAME:VERSION, see CatalogReference) and returns the manifest digest.
// opts.Kind and opts.Files are set by PushCatalog.
func (c *Client) PushCatalog(ctx context.Context, ref string, data []byte, opts PushOptions) (digest.Digest, error) {
	opts.Kind = KindCatalog
	opts.Files = []File{{Data: data, Title: "catalog.yaml"}}
	res, err := c.Push(ctx, ref, opts)
	if err != nil {
		return "", err
	}
	return res.Descriptor.Digest, nil
}

// CatalogReference is where the service pushes a catalog version: PREFIX/catalogs/NAME:VERSION.
func CatalogReference(prefix, name, version string) string {
	return strings.TrimSuffix(strings.TrimPrefix(prefix, "oci://"), "/") + "/catalogs/" + name + ":" + version
}

func (c *Client) push(ctx context.Context, refStr string, opts PushOptions) (PushResult, error) {
	ref, err := ParseReference(refStr)
	if err != nil {
		return PushResult{}, err
	}
	if ref.Digest != "" {
		return PushResult{}, fmt.Errorf("%w: push to a tag or a bare repository, not to a digest", ErrInvalidReference)
	}
	if err := checkFiles(opts); err != nil {
		return PushResult{}, err
	}
	created := opts.Created
	if created.IsZero() {
		created = time.Now()
	}
	base := map[string]string{ocispec.AnnotationCreated: created.UTC().Format(time.RFC3339)}
	if opts.Version != "" {
		base[ocispec.AnnotationVersion] = opts.Version
	}
	if opts.Source != "" {
		base[ocispec.AnnotationSource] = opts.Source
	}
	title := opts.Title
	if title == "" {
		title = opts.Files[0].title()
	}
	repo := c.repository(ref)
	mediaType := opts.Kind.MediaType()
	// Every manifest names the same empty config. It is pushed (when the registry lacks it) while
	// the layers upload, rather than by oras.PackManifest after each of them: on a registry that
	// lacks it, three requests fewer on the way, and on a remote one as many round trips.
	configDone := make(chan error, 1)
	go func() {
		configDone <- pushIfMissing(ctx, repo, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data)
	}()
	files := opts.Files
	if opts.Kind == KindExec {
		files = sortedByPlatform(files)
	}
	// The layers go one after the other: the progress display draws one transfer at a time.
	layers := make([]ocispec.Descriptor, len(files))
	for i, f := range files {
		if layers[i], err = c.pushBlob(ctx, repo, f, mediaType); err != nil {
			break
		}
	}
	if cerr := <-configDone; err == nil {
		err = cerr
	}
	if err != nil {
		return PushResult{}, err
	}
	packManifest := func(i int, p taggingPusher) (ocispec.Descriptor, error) {
		ann := maps.Clone(base)
		ann[ocispec.AnnotationTitle] = title
		if opts.Kind == KindExec {
			ann[ocispec.AnnotationTitle] = files[i].title()
		}
		p.configPresent = true
		return oras.PackManifest(ctx, p, oras.PackManifestVersion1_1, mediaType, oras.PackManifestOptions{
			Layers:              []ocispec.Descriptor{layers[i]},
			ManifestAnnotations: ann,
		})
	}
	res := PushResult{Kind: opts.Kind}
	if opts.Kind != KindExec {
		res.Descriptor, err = packManifest(0, taggingPusher{repo: repo, tag: ref.Tag})
		if err != nil {
			return PushResult{}, err
		}
		res.Reference = ref.WithDigest(res.Descriptor.Digest)
		return res, nil
	}
	for i, f := range files {
		m, err := packManifest(i, taggingPusher{repo: repo})
		if err != nil {
			return PushResult{}, err
		}
		// The index entry names the platform, not the file: `oras pull` takes a title annotation on
		// a descriptor as a file name, and would write the manifest itself under the binary's name.
		m.Platform, m.Annotations = f.Platform, nil
		res.Platforms = append(res.Platforms, m)
	}
	ann := maps.Clone(base)
	ann[ocispec.AnnotationTitle] = title
	index := ocispec.Index{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageIndex,
		ArtifactType: mediaType,
		Manifests:    res.Platforms,
		Annotations:  ann,
	}
	raw, err := json.Marshal(index)
	if err != nil {
		return PushResult{}, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageIndex, raw)
	desc.ArtifactType = mediaType
	if err := (taggingPusher{repo: repo, tag: ref.Tag}).Push(ctx, desc, bytes.NewReader(raw)); err != nil {
		return PushResult{}, err
	}
	res.Descriptor = plain(desc)
	res.Reference = ref.WithDigest(desc.Digest)
	return res, nil
}

func checkFiles(opts PushOptions) error {
	if opts.Kind.MediaType() == "" {
		return fmt.Errorf("unknown artifact kind %q", opts.Kind)
	}
	if len(opts.Files) == 0 {
		return errors.New("no file to push")
	}
	if opts.Kind != KindExec && len(opts.Files) != 1 {
		return fmt.Errorf("a %s artifact holds one file, not %d", opts.Kind, len(opts.Files))
	}
	seen := map[string]bool{}
	for _, f := range opts.Files {
		if err := checkTitle(f.title()); err != nil {
			return err
		}
		switch {
		case opts.Kind == KindExec && f.Platform == nil:
			return fmt.Errorf("exec binary %s has no platform: give it as os/arch=PATH", f.title())
		case opts.Kind != KindExec && f.Platform != nil:
			return fmt.Errorf("only exec artifacts have platforms, not %s artifacts", opts.Kind)
		case f.Platform != nil:
			p := PlatformString(*f.Platform)
			if seen[p] {
				return fmt.Errorf("platform %s is given twice", p)
			}
			seen[p] = true
		}
	}
	return nil
}

// checkTitle refuses titles that are not a plain file name: pull writes files under their titles,
// so a title with a path separator or ".." could write outside the output directory, one starting
// with a dot would write a hidden file that shells and tools read (.bashrc, .envrc, .npmrc), and a
// control character hides the name from whoever lists the directory. An invisible format
// character (a bidirectional control such as U+202E, a zero-width one) makes the name display as
// another ("evil\u202elmay.sh" lists as "evilhs.yaml"): refused as the service refuses it in
// names, tags and descriptions.
func checkTitle(title string) error {
	switch {
	case title == "", title == ".", title == "..":
		return fmt.Errorf("%w %q: it must name a file", ErrUnsafeTitle, title)
	case strings.ContainsAny(title, `/\`+"\x00"), filepath.Base(title) != title, filepath.IsAbs(title), filepath.VolumeName(title) != "":
		return fmt.Errorf("%w %q: a title is a file name without directories", ErrUnsafeTitle, title)
	case strings.HasPrefix(title, "."):
		return fmt.Errorf("%w %q: a title must not start with a dot (a hidden file such as .bashrc)", ErrUnsafeTitle, title)
	case len(title) > maxTitleBytes:
		return fmt.Errorf("%w %q: a title is at most %d bytes", ErrUnsafeTitle, title, maxTitleBytes)
	case strings.IndexFunc(title, unicode.IsControl) >= 0 || !utf8.ValidString(title):
		return fmt.Errorf("%w %q: a title must be valid UTF-8 without control characters", ErrUnsafeTitle, title)
	case strings.IndexFunc(title, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) >= 0:
		i := strings.IndexFunc(title, func(r rune) bool { return unicode.Is(unicode.Cf, r) })
		r, _ := utf8.DecodeRuneInString(title[i:])
		return fmt.Errorf("%w %q: a title must not hold the invisible format character U+%04X (bidirectional controls and zero-width characters display a name as another)", ErrUnsafeTitle, title, r)
	}
	return nil
}

// maxTitleBytes is the longest file name Linux and macOS file systems take.
const maxTitleBytes = 255

func sortedByPlatform(files []File) []File {
	out := slices.Clone(files)
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(PlatformString(*a.Platform), PlatformString(*b.Platform)) })
	return out
}

// pushIfMissing uploads a small blob unless the registry has it.
func pushIfMissing(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, data []byte) error {
	exists, err := repo.Exists(ctx, desc)
	if err != nil {
		return registryErr(err)
	}
	if exists {
		return nil
	}
	if err := repo.Push(ctx, desc, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("upload %s: %w", desc.Digest, err)
	}
	return nil
}

// pushBlob uploads one file as a layer, unless the registry has it already.
func (c *Client) pushBlob(ctx context.Context, repo *remote.Repository, f File, mediaType string) (ocispec.Descriptor, error) {
	var desc ocispec.Descriptor
	if f.Data != nil {
		desc = content.NewDescriptorFromBytes(mediaType, f.Data)
	} else {
		d, size, err := hashFile(f.Path)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		desc = ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: size}
	}
	desc.Annotations = map[string]string{ocispec.AnnotationTitle: f.title()}
	exists, err := repo.Exists(ctx, desc)
	if err != nil {
		return ocispec.Descriptor{}, registryErr(err)
	}
	if exists {
		return desc, nil
	}
	var src io.Reader
	if f.Data != nil {
		src = bytes.NewReader(f.Data)
	} else {
		file, err := os.Open(f.Path)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		defer file.Close()
		// Sent as it is: should the file change after it was hashed, the registry, which checks
		// the upload against the digest, refuses it. Hashing again here would cost a second pass.
		src = file
	}
	done := func(error) {}
	if c.opts.Progress != nil {
		var pw io.Writer
		pw, done = c.opts.Progress.Start(f.title(), desc.Size)
		src = io.TeeReader(src, pw)
	}
	err = repo.Push(ctx, desc, src)
	done(err)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("upload %s: %w", f.title(), err)
	}
	return desc, nil
}

func hashFile(path string) (digest.Digest, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	d := digest.Canonical.Digester()
	n, err := io.Copy(d.Hash(), f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return d.Digest(), n, nil
}

// taggingPusher pushes manifests under a tag rather than by digest, which saves the fetch and
// second upload of tagging afterwards. Blobs go to the repository as usual.
type taggingPusher struct {
	repo *remote.Repository
	tag  string
	// configPresent: the empty config is known to be in the repository (push pushed it).
	configPresent bool
}

func (p taggingPusher) Push(ctx context.Context, desc ocispec.Descriptor, r io.Reader) error {
	if p.tag != "" && isManifest(desc.MediaType) {
		return p.repo.PushReference(ctx, desc, r, p.tag)
	}
	return p.repo.Push(ctx, desc, r)
}

// Exists and Fetch let oras.PackManifest skip blobs the registry already has; it asks about the
// empty config only when push has not made sure of it already.
func (p taggingPusher) Exists(ctx context.Context, desc ocispec.Descriptor) (bool, error) {
	if p.configPresent && desc.Digest == ocispec.DescriptorEmptyJSON.Digest {
		return true, nil
	}
	return p.repo.Exists(ctx, desc)
}

func (p taggingPusher) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	return p.repo.Fetch(ctx, desc)
}

func isManifest(mediaType string) bool {
	switch mediaType {
	case ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageIndex,
		"application/vnd.docker.distribution.manifest.v2+json", "application/vnd.docker.distribution.manifest.list.v2+json":
		return true
	}
	return false
}

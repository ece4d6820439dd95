// Command release writes the parts of a release that are not `go build` output, byte for byte the
// same from the same inputs (fixed times, sorted entries, no user or host names): the container
// image of a static linux binary as a tar that is an OCI image layout and a `docker load` archive
// at once, the Helm chart's package with that image as its default, and an SPDX SBOM of a binary
// from its build information. scripts/release.sh runs it; docs/releasing.md says what it makes.
//
//	go run ./scripts/release image -binary B -platform linux/amd64 -ca CERTS -repository R -version V -epoch S -o OUT.tar
//	go run ./scripts/release chart -dir deploy/helm/krm-catalog -repository R -version V -epoch S -o OUT.tgz
//	go run ./scripts/release sbom -binary B -version V -epoch S -o OUT.spdx.json
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: release image|chart|sbom FLAGS")
	}
	fl := flag.NewFlagSet(args[0], flag.ContinueOnError)
	binary := fl.String("binary", "", "the binary")
	platform := fl.String("platform", "linux/amd64", "the image's OS/ARCH")
	ca := fl.String("ca", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle the image carries")
	repository := fl.String("repository", "krm-catalog", "the image repository (no tag)")
	version := fl.String("version", "", "the release version")
	epoch := fl.Int64("epoch", 0, "the time every file and record gets (Unix seconds, SOURCE_DATE_EPOCH)")
	dir := fl.String("dir", "deploy/helm/krm-catalog", "the chart directory")
	out := fl.String("o", "", "the file to write")
	if err := fl.Parse(args[1:]); err != nil {
		return err
	}
	if *version == "" || *out == "" {
		return errors.New("-version and -o are required")
	}
	when := time.Unix(*epoch, 0).UTC()
	var data []byte
	var err error
	switch args[0] {
	case "image":
		data, err = image(*binary, *platform, *ca, *repository, *version, when)
	case "chart":
		data, err = chart(*dir, *repository, *version, when)
	case "sbom":
		data, err = sbom(*binary, *version, when)
	default:
		return fmt.Errorf("unknown subcommand %q", args[0])
	}
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	return os.WriteFile(*out, data, 0o644)
}

// entry is one file or directory of a tar written by writeTar.
type entry struct {
	name string
	mode int64
	dir  bool
	data []byte
}

// writeTar writes entries in the order given, every one owned by root, at when.
func writeTar(w io.Writer, entries []entry, when time.Time) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: when, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
			h.Name = strings.TrimSuffix(e.name, "/") + "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// gzipped compresses data with no name and no time in the header: the same bytes for the same data
// and Go version.
func gzipped(data []byte) ([]byte, error) {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func digest(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// image is the image of the static binary: the binary at /krm-catalog, the CA bundle (for the
// registries and catalogs it reaches over TLS) and an empty /tmp (HOME; the chart mounts its own
// there, but `docker run` does not), run as 65532 like the Dockerfile's, serving on 8080. The
// chart's probes are HTTP and gRPC ones served by the binary itself: nothing else is needed.
func image(binary, platform, ca, repository, version string, when time.Time) ([]byte, error) {
	osName, arch, ok := strings.Cut(platform, "/")
	if !ok || osName != "linux" {
		return nil, fmt.Errorf("platform %q: the image is of a linux binary", platform)
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	certs, err := os.ReadFile(ca)
	if err != nil {
		return nil, err
	}
	var layerTar bytes.Buffer
	if err := writeTar(&layerTar, []entry{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/ssl", mode: 0o755, dir: true},
		{name: "etc/ssl/certs", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs},
		{name: "krm-catalog", mode: 0o755, data: bin},
		{name: "tmp", mode: 0o1777, dir: true},
	}, when); err != nil {
		return nil, err
	}
	layer, err := gzipped(layerTar.Bytes())
	if err != nil {
		return nil, err
	}
	created := when.Format(time.RFC3339)
	config, err := json.Marshal(map[string]any{
		"created":      created,
		"architecture": arch,
		"os":           osName,
		"config": map[string]any{
			"User":         "65532:65532",
			"Env":          []string{"HOME=/tmp", "XDG_CACHE_HOME=/tmp/cache"},
			"ExposedPorts": map[string]any{"8080/tcp": map[string]any{}},
			"Entrypoint":   []string{"/krm-catalog"},
			"Cmd":          []string{"serve", "--addr", "0.0.0.0:8080", "--log-format", "json"},
			"Labels": map[string]string{
				"org.opencontainers.image.title":   "krm-catalog",
				"org.opencontainers.image.version": version,
			},
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{digest(layerTar.Bytes())}},
		"history": []map[string]any{{"created": created, "created_by": "scripts/release image"}},
	})
	if err != nil {
		return nil, err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digest(config), Size: int64(len(config))},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: digest(layer), Size: int64(len(layer))}},
		"annotations":   map[string]string{"org.opencontainers.image.version": version, "org.opencontainers.image.created": created},
	})
	if err != nil {
		return nil, err
	}
	ref := repository + ":" + version
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []any{map[string]any{
			"mediaType":   "application/vnd.oci.image.manifest.v1+json",
			"digest":      digest(manifest),
			"size":        len(manifest),
			"platform":    map[string]string{"os": osName, "architecture": arch},
			"annotations": map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": version},
		}},
	})
	if err != nil {
		return nil, err
	}
	blob := func(data []byte) string { return "blobs/sha256/" + strings.TrimPrefix(digest(data), "sha256:") }
	// docker load (before Docker 25, which reads the layout itself) reads manifest.json
	dockerManifest, err := json.Marshal([]map[string]any{{
		"Config":   blob(config),
		"RepoTags": []string{ref},
		"Layers":   []string{blob(layer)},
	}})
	if err != nil {
		return nil, err
	}
	blobs := [][]byte{config, layer, manifest}
	sort.Slice(blobs, func(i, j int) bool { return blob(blobs[i]) < blob(blobs[j]) })
	entries := []entry{
		{name: "blobs", mode: 0o755, dir: true},
		{name: "blobs/sha256", mode: 0o755, dir: true},
	}
	for _, b := range blobs {
		entries = append(entries, entry{name: blob(b), mode: 0o644, data: b})
	}
	entries = append(entries,
		entry{name: "index.json", mode: 0o644, data: index},
		entry{name: "manifest.json", mode: 0o644, data: dockerManifest},
		entry{name: "oci-layout", mode: 0o644, data: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
	)
	var out bytes.Buffer
	if err := writeTar(&out, entries, when); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

var (
	chartVersionLine = regexp.MustCompile(`(?m)^version: .*$`)
	appVersionLine   = regexp.MustCompile(`(?m)^appVersion: .*$`)
	repositoryLine   = regexp.MustCompile(`(?m)^(image:\n(?:  #.*\n)*  repository:) .*$`)
)

// chart packages the chart as `helm package` does (the files under the chart's name, .helmignore's
// patterns left out) with its version and appVersion the release's and, when repository is set, its
// default image repository; the image tag defaults to the appVersion.
func chart(dir, repository, version string, when time.Time) ([]byte, error) {
	name := filepath.Base(dir)
	ignore, err := helmIgnore(filepath.Join(dir, ".helmignore"))
	if err != nil {
		return nil, err
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if ignored(ignore, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// helm package puts Chart.yaml first; the rest sorted
	sort.Slice(files, func(i, j int) bool {
		if (files[i] == "Chart.yaml") != (files[j] == "Chart.yaml") {
			return files[i] == "Chart.yaml"
		}
		return files[i] < files[j]
	})
	chartVersion := strings.TrimPrefix(version, "v")
	var entries []entry
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		switch f {
		case "Chart.yaml":
			if !chartVersionLine.Match(data) || !appVersionLine.Match(data) {
				return nil, errors.New("Chart.yaml has no version or appVersion line")
			}
			data = chartVersionLine.ReplaceAll(data, []byte("version: "+chartVersion))
			data = appVersionLine.ReplaceAll(data, []byte(fmt.Sprintf("appVersion: %q", version)))
		case "values.yaml":
			if repository != "" {
				if !repositoryLine.Match(data) {
					return nil, errors.New("values.yaml has no image.repository line")
				}
				data = repositoryLine.ReplaceAll(data, []byte("${1} "+repository))
			}
		}
		entries = append(entries, entry{name: name + "/" + f, mode: 0o644, data: data})
	}
	var t bytes.Buffer
	if err := writeTar(&t, entries, when); err != nil {
		return nil, err
	}
	return gzipped(t.Bytes())
}

// helmIgnore reads the patterns of a .helmignore (none when there is no file).
func helmIgnore(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pats []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			pats = append(pats, l)
		}
	}
	return pats, nil
}

// ignored reports whether a pattern matches the path's base name or the path, as the simple
// patterns of the chart's .helmignore mean (name globs); .helmignore itself is packaged, as helm
// packages it.
func ignored(pats []string, rel string) bool {
	for _, p := range pats {
		p = strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/")
		if ok, _ := path.Match(p, path.Base(rel)); ok {
			return true
		}
		if ok, _ := path.Match(p, rel); ok {
			return true
		}
	}
	return false
}

// sbom is an SPDX 2.3 document of the binary: the main module at the release's version, each
// module it was built from (debug/buildinfo, what `go version -m` prints), and the Go standard
// library at the toolchain's version.
func sbom(binary, version string, when time.Time) ([]byte, error) {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(bin)
	name := filepath.Base(binary)
	type checksum struct {
		Algorithm     string `json:"algorithm"`
		ChecksumValue string `json:"checksumValue"`
	}
	type extRef struct {
		ReferenceCategory string `json:"referenceCategory"`
		ReferenceType     string `json:"referenceType"`
		ReferenceLocator  string `json:"referenceLocator"`
	}
	type pkg struct {
		SPDXID           string     `json:"SPDXID"`
		Name             string     `json:"name"`
		VersionInfo      string     `json:"versionInfo"`
		DownloadLocation string     `json:"downloadLocation"`
		FilesAnalyzed    bool       `json:"filesAnalyzed"`
		Checksums        []checksum `json:"checksums,omitempty"`
		ExternalRefs     []extRef   `json:"externalRefs,omitempty"`
		Comment          string     `json:"comment,omitempty"`
	}
	type rel struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	}
	idChars := regexp.MustCompile(`[^A-Za-z0-9.-]+`)
	id := func(s string) string { return "SPDXRef-Package-" + idChars.ReplaceAllString(s, "-") }
	purl := func(p, v string) []extRef {
		return []extRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: "pkg:golang/" + p + "@" + v}}
	}
	var settings []string
	for _, s := range bi.Settings {
		settings = append(settings, s.Key+"="+s.Value)
	}
	mainID := id(bi.Main.Path)
	pkgs := []pkg{{
		SPDXID: mainID, Name: bi.Main.Path, VersionInfo: version, DownloadLocation: "NOASSERTION",
		Checksums:    []checksum{{Algorithm: "SHA256", ChecksumValue: hex.EncodeToString(sum[:])}},
		ExternalRefs: purl(bi.Main.Path, version),
		Comment:      "the binary " + name + ", package " + bi.Path + ", built with " + strings.Join(settings, " "),
	}}
	rels := []rel{{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: mainID}}
	goVersion := strings.TrimPrefix(bi.GoVersion, "go")
	pkgs = append(pkgs, pkg{SPDXID: id("stdlib"), Name: "stdlib", VersionInfo: goVersion, DownloadLocation: "NOASSERTION", ExternalRefs: purl("stdlib", bi.GoVersion)})
	rels = append(rels, rel{Element: mainID, Type: "DEPENDS_ON", Related: id("stdlib")})
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		v := m.Version
		if v == "(devel)" || v == "" {
			// a module of the tree (pkg/krmfn, through go.work): the release's version
			v = version
		}
		p := pkg{SPDXID: id(m.Path + "@" + v), Name: m.Path, VersionInfo: v, DownloadLocation: "NOASSERTION", ExternalRefs: purl(m.Path, v)}
		if m.Sum != "" {
			p.Comment = "go.sum " + m.Sum
		}
		pkgs = append(pkgs, p)
		rels = append(rels, rel{Element: mainID, Type: "DEPENDS_ON", Related: p.SPDXID})
	}
	doc := map[string]any{
		"spdxVersion":       "SPDX-2.3",
		"dataLicense":       "CC0-1.0",
		"SPDXID":            "SPDXRef-DOCUMENT",
		"name":              name + "-" + version,
		"documentNamespace": "https://spdx.org/spdxdocs/" + name + "-" + version + "-" + hex.EncodeToString(sum[:]),
		"creationInfo": map[string]any{
			"created":  when.Format(time.RFC3339),
			"creators": []string{"Tool: krm-catalog scripts/release"},
		},
		"packages":      pkgs,
		"relationships": rels,
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

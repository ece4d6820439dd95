// Package mirror copies a function catalog and everything it names into another registry, for
// air-gapped and private platforms: container images and exec indexes with every platform,
// starlark scripts, their referrers (attached definitions, sigstore bundles) and legacy cosign
// signatures, and the files a catalog names over https, which become OCI artifacts of the KEP-2906
// media types. It then writes a catalog whose runtimes point at the mirror, with the same digests
// and sha256, and pushes it. Nothing already in the mirror is sent again, so an interrupted mirror
// is completed by running it again, and a second run copies nothing. docs/mirror.md has the layout
// and the decisions.
package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// Options configure a mirror.
type Options struct {
	// Client talks to the source and the destination registries.
	Client *oci.Client
	// HTTP downloads the files a catalog names over https; nil uses a client with a 5-minute timeout.
	HTTP *http.Client
	// Prefix is where everything goes: registry.example.com/mirror.
	Prefix string
	// Tag is the mirrored catalog's tag; "" means "latest".
	Tag string
	// Signer, when set, signs the mirrored catalog in SignatureFormat (oci.FormatLegacy by default).
	Signer          *sign.Signer
	SignatureFormat string
	// Created is the creation time written into the artifacts made from https files and into the
	// catalog's manifest. A fixed time keeps their digests, so a second run pushes nothing; zero
	// means the Unix epoch.
	Created time.Time
	// DryRun plans and copies nothing.
	DryRun bool
	// Progress, when set, is told of each step as it starts (done false) and ends (done true).
	Progress func(s Step, done bool)
}

// Step actions.
const (
	ActionCopy        = "copy"         // an OCI image, index or artifact, with referrers and signatures
	ActionDownload    = "download"     // https files, verified and pushed as an OCI artifact
	ActionPushCatalog = "push-catalog" // the rewritten catalog
	ActionSign        = "sign"         // the rewritten catalog's signature
)

// Step is one thing a mirror does.
type Step struct {
	Action string `json:"action"`
	// Subjects are the function versions and runtimes the step serves.
	Subjects    []string `json:"subjects,omitempty"`
	Source      string   `json:"source,omitempty"`
	Destination string   `json:"destination"`
	// Result, after the run: the destination pinned by digest.
	Result string `json:"result,omitempty"`
	// Copied counts manifests, blobs and tags sent; Present what the mirror already had.
	Copied  int `json:"copied"`
	Present int `json:"present"`
	// Referrers and LegacySignature say what came along with a copy.
	Referrers       int  `json:"referrers,omitempty"`
	LegacySignature bool `json:"legacySignature,omitempty"`
}

// Result is what a mirror did.
type Result struct {
	Steps []Step `json:"steps"`
	// Catalog is the mirrored catalog's reference, oci://PREFIX/catalogs/NAME:TAG@sha256:...;
	// empty for a dry run.
	Catalog string `json:"catalog,omitempty"`
	// Data is the mirrored catalog.
	Data []byte `json:"-"`
}

// Copied is the total of what the steps sent.
func (r Result) Copied() int {
	n := 0
	for _, s := range r.Steps {
		n += s.Copied
	}
	return n
}

// ErrUnpinned: the catalog names a runtime without a digest; a mirror could not promise the same
// bytes, and krm-catalog would not run it anyway.
var ErrUnpinned = errors.New("runtime not pinned by digest")

// job is one step with what it does and the catalog edits its result feeds.
type job struct {
	step  Step
	run   func(ctx context.Context, s *Step) (string, error)
	edits []func(doc *yaml.RNode, ref string) error
}

// Mirror copies the catalog data (its decoded form cat) and what it names to o.Prefix.
func Mirror(ctx context.Context, data []byte, cat *catalog.Catalog, o Options) (Result, error) {
	if o.Client == nil {
		return Result{}, errors.New("mirror: no OCI client")
	}
	prefix := strings.TrimSuffix(strings.TrimPrefix(o.Prefix, "oci://"), "/")
	if _, err := oci.ParseReference(prefix + "/catalogs/x"); err != nil {
		return Result{}, fmt.Errorf("mirror to %q: %w", o.Prefix, err)
	}
	o.Prefix = prefix
	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0).UTC()
	}
	if o.Tag == "" {
		o.Tag = "latest"
	}
	jobs, err := plan(cat, o)
	if err != nil {
		return Result{}, err
	}
	doc, err := yaml.Parse(string(data))
	if err != nil {
		return Result{}, fmt.Errorf("mirror: parse the catalog: %w", err)
	}
	catRef := fmt.Sprintf("%s/catalogs/%s:%s", o.Prefix, strings.ToLower(cat.Name), o.Tag)
	var res Result
	for _, j := range jobs {
		if o.DryRun {
			res.Steps = append(res.Steps, j.step)
			continue
		}
		notify(o, j.step, false)
		ref, err := j.run(ctx, &j.step)
		if err != nil {
			return res, fmt.Errorf("mirror %s: %w", strings.Join(j.step.Subjects, ", "), err)
		}
		j.step.Result = ref
		for _, e := range j.edits {
			if err := e(doc, ref); err != nil {
				return res, fmt.Errorf("mirror: rewrite the catalog for %s: %w", strings.Join(j.step.Subjects, ", "), err)
			}
		}
		res.Steps = append(res.Steps, j.step)
		notify(o, j.step, true)
	}
	push := Step{Action: ActionPushCatalog, Destination: catRef}
	sig := Step{Action: ActionSign, Destination: catRef}
	if o.DryRun {
		res.Steps = append(res.Steps, push)
		if o.Signer != nil {
			res.Steps = append(res.Steps, sig)
		}
		return res, nil
	}
	out, err := doc.String()
	if err != nil {
		return res, fmt.Errorf("mirror: write the catalog: %w", err)
	}
	res.Data = []byte(out)
	notify(o, push, false)
	pinned, err := pushCatalog(ctx, o, catRef, res.Data, &push)
	if err != nil {
		return res, err
	}
	push.Result = pinned
	res.Steps = append(res.Steps, push)
	notify(o, push, true)
	if o.Signer != nil {
		notify(o, sig, false)
		if err := signCatalog(ctx, o, pinned, &sig); err != nil {
			return res, err
		}
		sig.Result = pinned
		res.Steps = append(res.Steps, sig)
		notify(o, sig, true)
	}
	res.Catalog = "oci://" + pinned
	return res, nil
}

func notify(o Options, s Step, done bool) {
	if o.Progress != nil {
		o.Progress(s, done)
	}
}

// plan lists the steps in catalog order, one per distinct source: functions that share an image
// share its copy.
func plan(cat *catalog.Catalog, o Options) ([]*job, error) {
	var jobs []*job
	bySource := map[string]*job{}
	add := func(key string, mk func() (*job, error), subject string, e func(doc *yaml.RNode, ref string) error) error {
		j, ok := bySource[key]
		if !ok {
			var err error
			if j, err = mk(); err != nil {
				return err
			}
			bySource[key] = j
			jobs = append(jobs, j)
		}
		j.step.Subjects = append(j.step.Subjects, subject)
		j.edits = append(j.edits, e)
		return nil
	}
	var errs []error
	for fi, f := range cat.Functions {
		for vi, v := range f.Versions {
			at := f.ID() + " " + v.Name
			rt := runtimeAt(fi, vi)
			if c := v.Runtime.Container; c != nil {
				errs = append(errs, planContainer(o, add, at, rt, *c))
			}
			if x := v.Runtime.Exec; x != nil {
				errs = append(errs, planExec(o, add, f, v, at, rt, x.Platforms))
			}
			if s := v.Runtime.Starlark; s != nil {
				errs = append(errs, planStarlark(o, add, f, v, at, rt, *s))
			}
		}
	}
	return jobs, errors.Join(errs...)
}

type adder func(key string, mk func() (*job, error), subject string, e func(doc *yaml.RNode, ref string) error) error

// runtimeAt finds the runtime node of function fi, version vi in the catalog document.
func runtimeAt(fi, vi int) func(doc *yaml.RNode) (*yaml.RNode, error) {
	return func(doc *yaml.RNode) (*yaml.RNode, error) {
		fns, err := doc.Pipe(yaml.Lookup("spec", "krmFunctions"))
		if err != nil || fns == nil || len(fns.Content()) <= fi {
			return nil, fmt.Errorf("no spec.krmFunctions[%d]", fi)
		}
		vs, err := yaml.NewRNode(fns.Content()[fi]).Pipe(yaml.Lookup("versions"))
		if err != nil || vs == nil || len(vs.Content()) <= vi {
			return nil, fmt.Errorf("no spec.krmFunctions[%d].versions[%d]", fi, vi)
		}
		rt, err := yaml.NewRNode(vs.Content()[vi]).Pipe(yaml.Lookup("runtime"))
		if err != nil || rt == nil {
			return nil, fmt.Errorf("no runtime in spec.krmFunctions[%d].versions[%d]", fi, vi)
		}
		return rt, nil
	}
}

// mirrored is where the repository of ref goes: PREFIX/REPOSITORY, keeping the tag.
func mirrored(o Options, ref oci.Reference) oci.Reference {
	return oci.Reference{Registry: registryOf(o.Prefix), Repository: repoUnder(o.Prefix, ref.Repository), Tag: ref.Tag}
}

func registryOf(prefix string) string {
	host, _, _ := strings.Cut(prefix, "/")
	return host
}

func repoUnder(prefix, repo string) string {
	if _, rest, ok := strings.Cut(prefix, "/"); ok && rest != "" {
		return rest + "/" + repo
	}
	return repo
}

// copyJob copies src to its place under the prefix and returns the destination pinned by digest.
func copyJob(o Options, src oci.Reference) func() (*job, error) {
	return func() (*job, error) {
		dst := mirrored(o, src)
		return &job{
			step: Step{Action: ActionCopy, Source: src.String(), Destination: dst.String()},
			run: func(ctx context.Context, s *Step) (string, error) {
				r, err := o.Client.Copy(ctx, src.String(), dst.String())
				if err != nil {
					return "", err
				}
				s.Copied, s.Present, s.Referrers, s.LegacySignature = r.Copied, r.Present, r.Referrers, r.LegacySignature
				return r.Reference.String(), nil
			},
		}, nil
	}
}

func planContainer(o Options, add adder, at string, rt func(*yaml.RNode) (*yaml.RNode, error), c catalog.ContainerRuntime) error {
	pinned := c.PinnedImage()
	src, err := oci.ParseReference(pinned)
	if err != nil {
		return fmt.Errorf("%s container: %w", at, err)
	}
	if src.Digest == "" {
		return fmt.Errorf("%s container %s: %w", at, c.Image, ErrUnpinned)
	}
	digestInImage := strings.Contains(c.Image, "@")
	return add(src.String(), copyJob(o, src), at+" container", func(doc *yaml.RNode, ref string) error {
		n, err := rt(doc)
		if err != nil {
			return err
		}
		image := ref
		if !digestInImage {
			// the digest stays in the sha256 field, as the author wrote it
			image, _, _ = strings.Cut(ref, "@")
		}
		c, err := n.Pipe(yaml.Lookup("container"))
		if err != nil || c == nil {
			return errors.New("no container runtime")
		}
		return setString(c, "image", image)
	})
}

func planExec(o Options, add adder, f catalog.Function, v catalog.Version, at string, rt func(*yaml.RNode) (*yaml.RNode, error), platforms []catalog.ExecPlatform) error {
	setURI := func(k int) func(doc *yaml.RNode, ref string) error {
		return func(doc *yaml.RNode, ref string) error {
			n, err := rt(doc)
			if err != nil {
				return err
			}
			p, err := n.Pipe(yaml.Lookup("exec", "platforms"))
			if err != nil || p == nil || len(p.Content()) <= k {
				return fmt.Errorf("no exec.platforms[%d]", k)
			}
			return setString(yaml.NewRNode(p.Content()[k]), "uri", "oci://"+ref)
		}
	}
	var https []int
	for k, p := range platforms {
		subject := fmt.Sprintf("%s exec %s/%s", at, p.OS, p.Arch)
		switch {
		case strings.HasPrefix(p.URI, "oci://"):
			src, err := oci.ParseReference(p.URI)
			if err != nil {
				return fmt.Errorf("%s: %w", subject, err)
			}
			if err := add(src.String(), copyJob(o, src), subject, setURI(k)); err != nil {
				return err
			}
		case strings.HasPrefix(p.URI, "https://"):
			if p.SHA256 == "" {
				return fmt.Errorf("%s %s: %w (no sha256)", subject, p.URI, ErrUnpinned)
			}
			https = append(https, k)
		default:
			return fmt.Errorf("%s: %q is neither oci:// nor https://", subject, p.URI)
		}
	}
	if len(https) == 0 {
		return nil
	}
	// the https executables of a version become one exec index, a manifest per platform
	dst := artifactRef(o, f, v.Name+"-exec")
	var sources []string
	for _, k := range https {
		sources = append(sources, platforms[k].URI)
	}
	mk := func() (*job, error) {
		return &job{
			step: Step{Action: ActionDownload, Source: strings.Join(sources, " "), Destination: dst},
			run: func(ctx context.Context, s *Step) (string, error) {
				var ps []catalog.ExecPlatform
				for _, k := range https {
					ps = append(ps, platforms[k])
				}
				return mirrorExecFiles(ctx, o, dst, ps, s)
			},
		}, nil
	}
	for _, k := range https {
		subject := fmt.Sprintf("%s exec %s/%s", at, platforms[k].OS, platforms[k].Arch)
		if err := add("https exec "+dst, mk, subject, setURI(k)); err != nil {
			return err
		}
	}
	return nil
}

func planStarlark(o Options, add adder, f catalog.Function, v catalog.Version, at string, rt func(*yaml.RNode) (*yaml.RNode, error), s catalog.StarlarkRuntime) error {
	subject := at + " starlark"
	src := s.Source()
	set := func(doc *yaml.RNode, ref string) error {
		n, err := rt(doc)
		if err != nil {
			return err
		}
		st, err := n.Pipe(yaml.Lookup("starlark"))
		if err != nil || st == nil {
			return errors.New("no starlark runtime")
		}
		if st.YNode().Kind == yaml.ScalarNode {
			return setString(n, "starlark", "oci://"+ref)
		}
		if err := setString(st, "ref", ref); err != nil {
			return err
		}
		return st.PipeE(yaml.Clear("uri"))
	}
	if s.Ref != "" || strings.HasPrefix(src, "oci://") {
		r, err := oci.ParseReference(src)
		if err != nil {
			return fmt.Errorf("%s: %w", subject, err)
		}
		if s.SHA256 == "" && r.Digest == "" {
			return fmt.Errorf("%s %s: %w", subject, src, ErrUnpinned)
		}
		return add(r.String(), copyJob(o, r), subject, set)
	}
	if !strings.HasPrefix(src, "https://") {
		return fmt.Errorf("%s: %q is neither oci:// nor https://", subject, src)
	}
	if s.SHA256 == "" {
		return fmt.Errorf("%s %s: %w (no sha256)", subject, src, ErrUnpinned)
	}
	dst := artifactRef(o, f, v.Name+"-starlark")
	return add("https "+src, func() (*job, error) {
		return &job{
			step: Step{Action: ActionDownload, Source: src, Destination: dst},
			run: func(ctx context.Context, st *Step) (string, error) {
				return mirrorStarlarkFile(ctx, o, dst, src, s.SHA256, st)
			},
		}, nil
	}, subject, set)
}

// setString sets a string field, keeping the old value's comments and quoting when it had one.
func setString(n *yaml.RNode, field, value string) error {
	if f := n.Field(field); f != nil && f.Value.YNode().Kind == yaml.ScalarNode {
		f.Value.YNode().Value, f.Value.YNode().Tag = value, yaml.NodeTagString
		return nil
	}
	return n.PipeE(yaml.SetField(field, yaml.NewStringRNode(value)))
}

// artifactRef is where a file fetched over https goes: PREFIX/functions/GROUP/KIND:TAG.
func artifactRef(o Options, f catalog.Function, tag string) string {
	return fmt.Sprintf("%s/functions/%s/%s:%s", o.Prefix, strings.ToLower(f.Group), strings.ToLower(f.Kind), tag)
}

// mirrorExecFiles pushes the executables of ps as one exec index at dst, unless dst already holds
// them (same platforms, same layer digests).
func mirrorExecFiles(ctx context.Context, o Options, dst string, ps []catalog.ExecPlatform, s *Step) (string, error) {
	if ref, ok := alreadyMirrored(ctx, o, dst, ps); ok {
		s.Present = len(ps)
		return ref, nil
	}
	dir, err := os.MkdirTemp("", "krm-catalog-mirror-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	var files []oci.File
	for i, p := range ps {
		name := path.Base(p.Bin)
		if p.Bin == "" || name == "." || name == "/" {
			name = "function"
		}
		file := fmt.Sprintf("%s/%d-%s", dir, i, name)
		if err := download(ctx, o, p.URI, p.SHA256, file); err != nil {
			return "", err
		}
		files = append(files, oci.File{Path: file, Title: name, Platform: &ocispec.Platform{OS: p.OS, Architecture: p.Arch}})
	}
	res, err := o.Client.Push(ctx, dst, oci.PushOptions{Kind: oci.KindExec, Files: files, Created: o.Created})
	if err != nil {
		return "", err
	}
	s.Copied = len(files)
	return res.Reference.String(), nil
}

func alreadyMirrored(ctx context.Context, o Options, dst string, ps []catalog.ExecPlatform) (string, bool) {
	ref := ""
	for _, p := range ps {
		a, err := o.Client.Resolve(ctx, dst, &ocispec.Platform{OS: p.OS, Architecture: p.Arch})
		if err != nil || a.Kind != oci.KindExec || len(a.Layers) != 1 || a.Layers[0].Digest.Encoded() != p.SHA256 {
			return "", false
		}
		if ref != "" && ref != a.Reference.String() {
			return "", false
		}
		ref = a.Reference.String()
	}
	return ref, ref != ""
}

func mirrorStarlarkFile(ctx context.Context, o Options, dst, src, sum string, s *Step) (string, error) {
	if a, err := o.Client.Resolve(ctx, dst, nil); err == nil && a.Kind == oci.KindStarlark && len(a.Layers) == 1 && a.Layers[0].Digest.Encoded() == sum {
		s.Present = 1
		return a.Reference.String(), nil
	}
	dir, err := os.MkdirTemp("", "krm-catalog-mirror-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	name := path.Base(src)
	if name == "." || name == "/" || name == "" {
		name = "script.star"
	}
	file := dir + "/" + name
	if err := download(ctx, o, src, sum, file); err != nil {
		return "", err
	}
	res, err := o.Client.Push(ctx, dst, oci.PushOptions{Kind: oci.KindStarlark, Files: []oci.File{{Path: file, Title: name}}, Created: o.Created})
	if err != nil {
		return "", err
	}
	s.Copied = 1
	return res.Reference.String(), nil
}

// download fetches url into file and checks its sha256 before anything is pushed.
func download(ctx context.Context, o Options, url, want, file string) error {
	client := o.HTTP
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Minute}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download %s: %s", url, resp.Status)
	}
	if resp.Request != nil && resp.Request.URL.Scheme != "https" {
		return fmt.Errorf("download %s: redirected to %s, which is not https", url, resp.Request.URL)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.TrimPrefix(want, "sha256:") {
		return fmt.Errorf("download %s: %w: sha256 %s, the catalog pins %s; nothing was pushed", url, oci.ErrDigestMismatch, got, want)
	}
	return nil
}

// pushCatalog pushes the rewritten catalog unless the tag already holds these very bytes.
func pushCatalog(ctx context.Context, o Options, ref string, data []byte, s *Step) (string, error) {
	if a, cur, err := o.Client.Read(ctx, ref, catalog.MaxInputBytes); err == nil && bytes.Equal(cur, data) {
		s.Present = 1
		return a.Reference.String(), nil
	}
	d, err := o.Client.PushCatalog(ctx, ref, data, oci.PushOptions{Created: o.Created})
	if err != nil {
		return "", fmt.Errorf("mirror: %w", err)
	}
	s.Copied = 1
	r, err := oci.ParseReference(ref)
	if err != nil {
		return "", err
	}
	return r.WithDigest(d).String(), nil
}

// signCatalog signs the mirrored catalog unless a signature of the same format by the same key is
// there already.
func signCatalog(ctx context.Context, o Options, pinned string, s *Step) error {
	format := o.SignatureFormat
	if format == "" {
		format = oci.FormatLegacy
	}
	if _, sigs, err := o.Client.Signatures(ctx, pinned, []sign.PublicKey{o.Signer.Public()}); err == nil {
		for _, sg := range sigs {
			if sg.Verified && sg.Format == format {
				s.Present = 1
				return nil
			}
		}
	}
	if _, err := o.Client.Sign(ctx, pinned, o.Signer, oci.SignOptions{Format: format}); err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	s.Copied = 1
	return nil
}

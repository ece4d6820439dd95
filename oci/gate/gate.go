// Package gate is `krm-catalog verify`, the CI gate: it validates catalogs and definitions as
// `validate` does, then checks the OCI artifacts they point at against the registry: that they
// exist, that they are the artifacts the documents record (digests), and, with trusted keys, that
// they are signed by one of them.
package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/loopback"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/schemas"
)

// Options tune the gate.
type Options struct {
	// RequirePinned makes a container image with a semver tag and no digest an error, as the KEP
	// demands (validate's rule); false turns that error into a warning.
	RequirePinned bool
	// Strict turns warnings into errors.
	Strict bool
	// Keys are the trusted cosign public keys; signatures are checked when there are any.
	Keys []sign.PublicKey
	// Identities are the trusted keyless signers, beside Keys; TrustedRoot verifies their
	// certificates (nil: the public-good root embedded in the binary).
	Identities  []sign.Identity
	TrustedRoot root.TrustedMaterial
	// RequireSignatures makes a missing or untrusted signature an error (else a warning). It needs
	// Keys or Identities.
	RequireSignatures bool
	// RequireProvenance makes each pinned artifact need an SLSA provenance attestation (an OCI
	// referrer, as cosign attests) signed by a trusted key or identity, about its digest, that
	// satisfies Provenance and the source repository its catalog entry states. Without it, an entry
	// that states a source repository is still checked, a failure being a warning.
	RequireProvenance bool
	Provenance        sign.ProvenancePolicy
	// Offline skips every registry check; only the documents are validated.
	Offline bool
	// HTTPClient fetches https:// inputs (and http:// ones on this machine), and the exec binaries
	// and starlark scripts documents name by https URL; nil means a client with a one-minute
	// timeout (a download of an artifact is bounded by five minutes instead).
	HTTPClient *http.Client
	// MaxSize bounds one download of an https artifact; 0 means oci.DefaultPullMaxBytes.
	MaxSize int64
}

func (o Options) trust() sign.Trust {
	return sign.Trust{Keys: o.Keys, Identities: o.Identities, Root: o.TrustedRoot}
}

// Gate runs the checks. It is not safe for concurrent use.
type Gate struct {
	client    *oci.Client
	validator *catalog.Validator
	opts      Options
	// resolved remembers artifacts already checked: catalogs often name one artifact many times.
	resolved map[string]resolution
	signed   map[string]error
	fetched  map[string]fetched // https artifacts by URL
}

type resolution struct {
	artifact oci.Artifact
	err      error
}

// New returns a gate that reaches registries through client.
func New(client *oci.Client, opts Options) (*Gate, error) {
	if opts.RequireSignatures && opts.trust().IsZero() {
		return nil, errors.New("signatures can only be required with at least one trusted key or certificate identity")
	}
	if opts.RequireProvenance && opts.trust().IsZero() {
		return nil, errors.New("provenance can only be required with at least one trusted key or certificate identity: they sign it")
	}
	if opts.Offline && (opts.RequireSignatures || opts.RequireProvenance) {
		return nil, errors.New("signatures and provenance cannot be checked offline")
	}
	v, err := catalog.NewValidator()
	if err != nil {
		return nil, err
	}
	hc := http.Client{Timeout: time.Minute}
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient // a copy, so the caller's client keeps its own redirect rule
	}
	hc.CheckRedirect = loopback.CheckRedirect(hc.CheckRedirect)
	opts.HTTPClient = &hc
	if opts.MaxSize <= 0 {
		opts.MaxSize = oci.DefaultPullMaxBytes
	}
	return &Gate{client: client, validator: v, opts: opts, resolved: map[string]resolution{}, signed: map[string]error{}, fetched: map[string]fetched{}}, nil
}

// Check is one OCI artifact the gate looked at.
type Check struct {
	File     string `json:"file"`
	Document int    `json:"document"`
	Pointer  string `json:"pointer"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	// What names the check: "catalog", "exec linux/amd64", "starlark", "container image".
	What      string `json:"what"`
	Reference string `json:"reference"`
	// Digest is the manifest (or index) digest the reference resolved to.
	Digest string `json:"digest,omitempty"`
	// Signed names the key, or the certificate identity, whose signature verified.
	Signed string `json:"signedBy,omitempty"`
	// Provenance says what the provenance that verified states: source, builder, signer.
	Provenance string `json:"provenance,omitempty"`
	// Skipped says why the artifact was not checked (SkippedOffline, ...); empty when it was.
	Skipped  string           `json:"skipped,omitempty"`
	OK       bool             `json:"ok"`
	Findings catalog.Findings `json:"findings,omitempty"`

	// position finds the line and column of a pointer in the document.
	position func(pointer string) (line, col int)
}

// Report is the outcome of a run.
type Report struct {
	// Inputs is how many files (and references) were read.
	Inputs int
	// Validation holds what validation found; Checks what the artifact checks found.
	Validation catalog.Findings
	Checks     []Check
}

// Findings is every finding, sorted.
func (r Report) Findings() catalog.Findings {
	all := append(catalog.Findings{}, r.Validation...)
	for _, c := range r.Checks {
		all = append(all, c.Findings...)
	}
	all.Sort()
	return all
}

// Run reads the inputs (files, directories, "-", oci:// and https:// references, http:// on this machine) and checks them.
// The error joins the inputs that could not be read; the report covers the ones that could.
func (g *Gate) Run(ctx context.Context, args []string, stdin io.Reader) (Report, error) {
	var (
		rep    Report
		paths  []string
		inputs []catalog.Input
		errs   []error
	)
	type remote struct {
		input catalog.Input
		art   *oci.Artifact
	}
	var remotes []remote
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "oci://"):
			if g.opts.Offline {
				errs = append(errs, fmt.Errorf("%s: cannot read an oci:// input offline", a))
				continue
			}
			art, data, err := g.client.Read(ctx, a, catalog.MaxInputBytes)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			remotes = append(remotes, remote{catalog.Input{Name: a, Data: data, Size: int64(len(data))}, &art})
		case strings.HasPrefix(a, "https://"), strings.HasPrefix(a, "http://"):
			data, err := g.fetchURL(ctx, a)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			remotes = append(remotes, remote{input: catalog.Input{Name: a, Data: data, Size: int64(len(data))}})
		default:
			paths = append(paths, a)
		}
	}
	if len(paths) > 0 {
		read, err := catalog.ReadInputs(paths, stdin)
		inputs = append(inputs, read...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range remotes {
		inputs = append(inputs, r.input)
	}
	rep.Inputs = len(inputs)
	for _, in := range inputs {
		if in.TooLarge {
			rep.Validation = append(rep.Validation, catalog.Finding{Severity: catalog.SeverityError, File: in.Name, Line: 1, Column: 1,
				Message: fmt.Sprintf("input is larger than the %d-byte limit", catalog.MaxInputBytes)})
			continue
		}
		docs, findings := g.validator.Validate(in.Name, in.Data, catalog.Options{IgnoreUnknownKinds: in.FromDirectory})
		rep.Validation = append(rep.Validation, g.adjustPinning(docs, findings)...)
		for _, d := range docs {
			rep.Checks = append(rep.Checks, g.checkDocument(ctx, d)...)
		}
	}
	for _, r := range remotes {
		if r.art != nil && !g.opts.trust().IsZero() {
			c := Check{File: r.input.Name, What: string(r.art.Kind), Reference: r.art.Reference.String(), Digest: r.art.Root.Digest.String(), Line: 1, Column: 1}
			g.checkSignature(ctx, &c, r.art.Reference.String())
			rep.Checks = append(rep.Checks, c.done())
		}
	}
	if g.opts.Strict {
		rep.Validation = rep.Validation.Strict()
		for i := range rep.Checks {
			rep.Checks[i].Findings = rep.Checks[i].Findings.Strict()
			rep.Checks[i] = rep.Checks[i].done()
		}
	}
	rep.Validation.Sort()
	return rep, errors.Join(errs...)
}

// adjustPinning applies RequirePinned: validate reports a semver-tagged image without a digest as
// an error; with RequirePinned off it becomes a warning. The image is re-parsed rather than the
// message matched, so the rule follows validate's meaning, not its wording.
func (g *Gate) adjustPinning(docs []*catalog.Document, fs catalog.Findings) catalog.Findings {
	if g.opts.RequirePinned {
		return fs
	}
	images := map[string]string{} // file#doc#pointer -> image
	for _, d := range docs {
		for _, fn := range functionsOf(d) {
			for vi, v := range fn.Versions {
				if v.Runtime.Container != nil {
					images[fmt.Sprintf("%d%s/versions/%d/runtime/container/image", d.Index, fn.Pointer, vi)] = v.Runtime.Container.Image
				}
			}
		}
	}
	out := make(catalog.Findings, 0, len(fs))
	for _, f := range fs {
		if img, ok := images[fmt.Sprintf("%d%s", f.Document, f.Pointer)]; ok && f.Severity == catalog.SeverityError {
			if ref, err := catalog.ParseImage(img); err == nil && ref.Digest == "" && catalog.IsSemverTag(ref.Tag) {
				f.Severity = catalog.SeverityWarning
			}
		}
		out = append(out, f)
	}
	return out
}

func functionsOf(d *catalog.Document) []catalog.Function {
	switch d.Kind {
	case catalog.KindCatalog, catalog.KindCatalogShort:
		if c, err := catalog.DecodeCatalog(d); err == nil {
			return c.Functions
		}
	case catalog.KindDefinition:
		if def, err := catalog.DecodeDefinition(d); err == nil {
			return []catalog.Function{def.Function}
		}
	}
	return nil
}

// checkDocument checks every OCI artifact a catalog or definition names.
func (g *Gate) checkDocument(ctx context.Context, d *catalog.Document) []Check {
	var checks []Check
	for _, fn := range functionsOf(d) {
		for vi, v := range fn.Versions {
			at := fmt.Sprintf("%s/versions/%d/runtime", fn.Pointer, vi)
			newCheck := func(pointer, what, ref string) Check {
				line, col := d.Position(pointer)
				return Check{File: d.File, Document: d.Index, Pointer: pointer, Line: line, Column: col, What: what, Reference: ref, position: d.Position}
			}
			// check runs one check, or, offline, records it as skipped
			check := func(c Check, run func(c *Check)) {
				if g.opts.Offline {
					c.Skipped = SkippedOffline
				} else {
					run(&c)
					g.checkProvenance(ctx, &c, v.Provenance)
				}
				checks = append(checks, c.done())
			}
			if ct := v.Runtime.Container; ct != nil && ct.Image != "" {
				check(newCheck(at+"/container/image", "container image", ct.Image), func(c *Check) { g.checkContainer(ctx, c, *ct, at+"/container") })
			}
			if ex := v.Runtime.Exec; ex != nil {
				for pi, p := range ex.Platforms {
					pat := fmt.Sprintf("%s/exec/platforms/%d", at, pi)
					what := "exec " + p.OS + "/" + p.Arch
					uri, ok := strings.CutPrefix(p.URI, "oci://")
					if !ok {
						check(newCheck(pat+"/uri", what, p.URI), func(c *Check) { g.checkHTTPS(ctx, c, p.URI, p.SHA256, pat+"/sha256", oci.KindExec) })
						continue
					}
					check(newCheck(pat+"/uri", what, uri), func(c *Check) {
						g.checkRuntimeArtifact(ctx, c, uri, &ocispec.Platform{OS: p.OS, Architecture: p.Arch}, oci.KindExec, p.SHA256, pat+"/sha256")
					})
				}
			}
			if st := v.Runtime.Starlark; st != nil {
				ref, pointer := st.Ref, at+"/starlark/ref"
				if ref == "" {
					pointer = at + "/starlark"
					if _, isObj := schemas.Lookup(d.Value, pointer).(map[string]any); isObj {
						pointer += "/uri"
					}
					uri, ok := strings.CutPrefix(st.URI, "oci://")
					if !ok {
						check(newCheck(pointer, "starlark", st.URI), func(c *Check) { g.checkHTTPS(ctx, c, st.URI, st.SHA256, at+"/starlark/sha256", oci.KindStarlark) })
						continue
					}
					ref = uri
				}
				ref = strings.TrimPrefix(ref, "oci://")
				check(newCheck(pointer, "starlark", ref), func(c *Check) {
					g.checkRuntimeArtifact(ctx, c, ref, nil, oci.KindStarlark, st.SHA256, at+"/starlark/sha256")
				})
			}
		}
	}
	return checks
}

package kpt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// Options configure Render.
type Options struct {
	// Runner checks and builds the steps (permissions, fetching and verifying what runs).
	Runner *runner.Runner
	// Tags lists a registry's tags, for a step whose tag constraint names an image no trusted
	// catalog lists; nil refuses such a step.
	Tags TagLister
	// Getenv reads the environment (DisableAttributionEnv); nil is os.Getenv.
	Getenv func(string) string
	// MemoDir keeps, per package and pipeline, the digest of what the last render wrote
	// (memo.go); "" remembers nothing.
	MemoDir string
	// Force renders a package even when it is what the last render wrote (--no-skip); the render
	// is still remembered.
	Force bool

	// memoLookup lets Render skip an unchanged package: Run sets it where the result is written
	// back and no results file is asked for.
	memoLookup bool
}

// Result is a rendered package, not yet written.
type Result struct {
	// Package is the package as read; Package.Write(Items) writes the result back.
	Package *fn.Package
	// Items are the resources after every pipeline, with their path and index annotations relative
	// to the root package.
	Items []*yaml.RNode
	// Runs are the results of every step that ran, in the order they ran.
	Runs []fn.FunctionResults
	// Packages counts the packages rendered: the root and its subpackages.
	Packages int
	// input is the package as read (the Kptfiles included), for writing the status of a render
	// that failed into the root Kptfile and nothing else; once the steps have run (reread), the
	// package's files are read again for it instead (Input)
	input  []*yaml.RNode
	reread bool
	// Status records every step that ran or could not start, for the root Kptfile's renderStatus.
	Status RenderStatus
	// Saved says that the render failed and Items are what it rendered until then, to be written
	// as the root Kptfile's kpt.dev/save-on-render-failure annotation asks.
	Saved bool
	// Unchanged says that the package is what the last render of the same pipeline wrote and every
	// step is idempotent: nothing ran, nothing is to be written (docs/skip.md).
	Unchanged bool

	save bool
	memo *memo // nil when the render is not one to remember
}

// SaveOnRenderFailureAnnotation on the root Kptfile asks render to write what it rendered until
// a step failed, as kpt does.
const SaveOnRenderFailureAnnotation = "kpt.dev/save-on-render-failure"

// BFSRenderAnnotation on the root Kptfile renders the packages top-down, level by level, as kpt
// does: each package's pipeline sees its own resources and its subpackages'.
const BFSRenderAnnotation = "kpt.dev/bfs-rendering"

// isKustomization reports whether a file is kustomize's, which kpt leaves to kustomize.
func isKustomization(p string) bool {
	switch path.Base(p) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}

// isTrue reads an annotation's value as kpt reads a condition: "true" in any case.
func isTrue(v string) bool { return strings.EqualFold(v, "true") }

// Input is the package as read, the Kptfiles included.
func (r *Result) Input() ([]*yaml.RNode, error) {
	if r.reread {
		return r.Package.Items()
	}
	return r.input, nil
}

// StatusItems are the items to write after a render: on success the rendered items, on failure the
// package as read; either with the root Kptfile's status set as kpt sets it.
func (r *Result) StatusItems(renderErr error) ([]*yaml.RNode, error) {
	items := r.Items
	if renderErr != nil && !r.Saved {
		var err error
		if items, err = r.Input(); err != nil {
			return nil, err
		}
	}
	kf := rootKptfile(items)
	if kf == nil {
		return nil, fmt.Errorf("set Kptfile status: no root %s among the items", KptfileName)
	}
	if err := SetStatus(kf, &r.Status, renderErr, r.Package.Dir); err != nil {
		return nil, err
	}
	return items, nil
}

// node is one package of the tree: the root or a subpackage (a directory with its own Kptfile).
type node struct {
	rel        string // slash path from the root, "" for the root
	dir        string
	abs        string // dir made absolute: the package path its items carry during the render
	kf         *Kptfile
	children   []*node
	mutators   []fn.Step
	validators []fn.Step
}

// Render renders the package at dir: the pipeline of every subpackage first (depth-first, in
// directory order) over its own resources, then the package's own pipeline over its resources and
// everything its subpackages produced. Mutators run in order, then validators, which see the result
// and whose output is discarded. The Kptfiles and resources marked local-config are function input,
// as kpt gives them. Every step is resolved, checked and fetched before the first runs;
// when a step fails, the error wraps fn.ErrFunctionFailed and the Result carries the runs so far
// (nothing is to be written).
func Render(ctx context.Context, dir string, o Options) (*Result, error) {
	// a symbolic link to the package is rendered as the package it points to (as kpt does); the
	// Kptfiles are found from the directory the package reader reads
	dir = fn.PackageRoot(dir)
	root, err := findPackages(dir)
	if err != nil {
		return failedSubpackage(dir, err)
	}
	ignored, err := krmignored(dir)
	if err != nil {
		return nil, err
	}
	pkg, items, err := fn.ReadPackage(dir, ignored...)
	if err != nil {
		return nil, err
	}
	all := root.walk(nil)
	for _, n := range all {
		kfItems, err := pkg.ReadFile(path.Join(n.rel, KptfileName))
		if err != nil {
			return nil, err
		}
		items = append(items, kfItems...)
	}
	// nothing changes the items before the steps run, which is when Input becomes a second
	// reading of the files
	res := &Result{Package: pkg, Packages: len(all), input: items}
	// as kpt, a YAML file that is not a KRM resource (kustomize's kustomization.yaml aside) fails the
	// render unless .krmignore names it
	for _, f := range pkg.Skipped {
		if isKustomization(f) {
			continue
		}
		err := fmt.Errorf("%w: input resource list must contain only KRM resources: %s: resource must have `apiVersion` and `kind` (list it in %s to leave it out)", fn.ErrInvalidPackage, f, KrmignoreName)
		// the first step that would have been given it fails, as kpt records it
		byRel := map[string]*node{}
		for _, n := range all {
			byRel[n.rel] = n
		}
		for rel := ownerOf(byRel, path.Dir(f)); ; rel = ownerOf(byRel, path.Dir(rel)) {
			n := byRel[rel]
			if len(n.kf.Pipeline.Mutators) > 0 {
				f := n.kf.Pipeline.Mutators[0]
				res.Status.MutationSteps = append(res.Status.MutationSteps, notStarted(f, displayImage(f.Image), err))
				break
			}
			if len(n.kf.Pipeline.Validators) > 0 {
				f := n.kf.Pipeline.Validators[0]
				res.Status.ValidationSteps = append(res.Status.ValidationSteps, notStarted(f, displayImage(f.Image), err))
				break
			}
			if rel == "" {
				break
			}
		}
		return res, err
	}
	pins, invalid, err := prepare(ctx, o, all, items, res)
	if err != nil {
		var static *staticError
		if errors.As(err, &static) {
			// as kpt, a Kptfile that fails its checks gets no status
			return nil, err
		}
		res.Runs = invalid
		return res, err
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	res.memo = newMemo(o.MemoDir, dir, pins, getenv(DisableAttributionEnv) == "")
	if res.memo != nil && o.memoLookup && !o.Force && res.memo.remembered() == pkg.Digest(nil) {
		res.Unchanged = true
		return res, nil
	}
	res.input, res.reread = nil, true
	res.save = isTrue(root.kf.Annotations[SaveOnRenderFailureAnnotation])
	render := hydrate
	if isTrue(root.kf.Annotations[BFSRenderAnnotation]) {
		render = hydrateBFS
	}
	t, err := newTree(all)
	if err != nil {
		return nil, err
	}
	if err := t.toPackages(items); err != nil {
		return nil, err
	}
	out, err := render(ctx, t, root, items, res)
	if err != nil {
		if res.save && out != nil {
			if rerr := t.toRoot(out); rerr != nil {
				return res, err
			}
			res.Items, res.Saved = out, true
			attribute(out, o.Getenv)
		}
		return res, err
	}
	if err := t.toRoot(out); err != nil {
		res.Status.RejectLast(err)
		return res, err
	}
	attribute(out, o.Getenv)
	res.Items = out
	return res, nil
}

// failedSubpackage is Render's outcome when a subpackage's Kptfile cannot be read but the root's
// can: as kpt, the failure goes into the root Kptfile's status, with no step recorded.
func failedSubpackage(dir string, err error) (*Result, error) {
	data, rerr := os.ReadFile(filepath.Join(dir, KptfileName))
	if rerr != nil {
		return nil, err
	}
	if _, perr := ParseKptfile(data); perr != nil {
		return nil, err
	}
	pkg, _, rerr := fn.ReadPackage(dir)
	if rerr != nil {
		return nil, err
	}
	kf, rerr := pkg.ReadFile(KptfileName)
	if rerr != nil {
		return nil, err
	}
	return &Result{Package: pkg, input: kf}, err
}

// walk lists the tree's packages, each after its subpackages (the order they render in).
func (n *node) walk(acc []*node) []*node {
	for _, c := range n.children {
		acc = c.walk(acc)
	}
	return append(acc, n)
}

// findPackages reads the root Kptfile and those of the directories below that have one, skipping
// hidden directories and symbolic links as the package reader does.
func findPackages(dir string) (*node, error) {
	root, err := readNode(dir, "")
	if err != nil {
		return nil, err
	}
	byRel := map[string]*node{"": root}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if st, err := os.Lstat(filepath.Join(p, KptfileName)); err != nil || !st.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		n, err := readNode(p, rel)
		if err != nil {
			return err
		}
		byRel[rel] = n
		parent := byRel[ownerOf(byRel, path.Dir(rel))]
		parent.children = append(parent.children, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return root, nil
}

func readNode(dir, rel string) (*node, error) {
	data, err := os.ReadFile(filepath.Join(dir, KptfileName))
	if err != nil {
		return nil, fmt.Errorf("read package %s: %w", dir, err)
	}
	kf, err := ParseKptfile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, KptfileName), err)
	}
	return &node{rel: rel, dir: dir, kf: kf}, nil
}

// ownerOf returns the package (its rel) that a slash directory path belongs to: the deepest package
// at or above it.
func ownerOf[T any](pkgs map[string]T, dir string) string {
	for {
		if dir == "." {
			dir = ""
		}
		if _, ok := pkgs[dir]; ok {
			return dir
		}
		if dir == "" {
			return ""
		}
		dir = path.Dir(dir)
	}
}

// itemPath is an item's path annotation: the internal one, else the legacy one.
func itemPath(n *yaml.RNode) string {
	anns := n.GetAnnotations()
	if p := anns[kioutil.PathAnnotation]; p != "" {
		return p
	}
	return anns[kioutil.LegacyPathAnnotation]
}

func setItemPath(n *yaml.RNode, p string) error {
	for _, k := range []string{kioutil.PathAnnotation, kioutil.LegacyPathAnnotation} {
		if err := n.PipeE(yaml.SetAnnotation(k, p)); err != nil {
			return err
		}
	}
	return nil
}

// prepare readies the steps of every package: all are resolved and their configs checked before
// anything is fetched, and nothing runs unless every step is ready. It returns the steps' pins
// (runner.Checked.Pin), in render order.
func prepare(ctx context.Context, o Options, all []*node, items []*yaml.RNode, res *Result) ([]string, []fn.FunctionResults, error) {
	type ref struct {
		n         *node
		f         Function
		validator bool
		cfg       *yaml.RNode
		checked   *runner.Checked
		pos       *Function // the step in its Kptfile: its image becomes the tag's resolution
	}
	var refs []*ref
	var pinned []*resolver.Resolution
	for _, n := range all {
		for i := range n.kf.Pipeline.Mutators {
			refs = append(refs, &ref{n: n, f: n.kf.Pipeline.Mutators[i], pos: &n.kf.Pipeline.Mutators[i]})
		}
		for i := range n.kf.Pipeline.Validators {
			refs = append(refs, &ref{n: n, f: n.kf.Pipeline.Validators[i], validator: true, pos: &n.kf.Pipeline.Validators[i]})
		}
	}
	pinned = make([]*resolver.Resolution, len(refs))
	pkgs := map[string]*node{}
	for _, n := range all {
		pkgs[n.rel] = n
	}
	// a step that cannot start is recorded in the render status as kpt records it
	failed := func(r *ref, results []fn.Result, err error) {
		s := notStarted(r.f, displayImage(r.f.Image), err)
		if len(results) > 0 {
			s.ExecutionError = ""
			s.Results = results
			s.ErrorResults = results
		}
		if r.validator {
			res.Status.ValidationSteps = append(res.Status.ValidationSteps, s)
		} else {
			res.Status.MutationSteps = append(res.Status.MutationSteps, s)
		}
	}
	steps, invalid, err := fn.Prepare(len(refs), func(i int) (string, []fn.Result, error) {
		r := refs[i]
		cfg, err := stepConfig(r.n, r.f, items, pkgs)
		if err != nil {
			// kpt finds these while reading the pipeline, before any step, and records no step
			return "", nil, err
		}
		r.cfg = cfg
		if r.f.Image != "" {
			full, err := expandShort(ctx, o.Runner.Resolver(), r.f.Image)
			if err != nil {
				err = fmt.Errorf("%s: %s: %w", r.n.kptfilePath(), r.f.Label(), err)
				failed(r, nil, err)
				return "", nil, err
			}
			r.f.Image, r.pos.Image = full, full
		}
		if r.f.Tag != "" {
			// a tag constraint resolves first; the status then names the version that ran
			ti, err := resolveTag(ctx, o.Runner.Resolver(), o.Tags, r.f.Image, r.f.Tag)
			if err != nil {
				err = fmt.Errorf("%s: %s: %w", r.n.kptfilePath(), r.f.Label(), err)
				failed(r, nil, err)
				return "", nil, err
			}
			r.f.Image, r.f.Tag = ti.Image, ""
			r.pos.Image, r.pos.Tag = ti.Image, ""
			pinned[i] = ti.Catalog
		}
		var c *runner.Checked
		var results []fn.Result
		if pinned[i] != nil {
			c, results, err = o.Runner.CheckResolved(pinned[i], cfg)
		} else {
			c, results, err = check(ctx, o, r.f, cfg, r.n.dir)
		}
		if err != nil && len(results) == 0 {
			err = fmt.Errorf("%s: %s: %w", r.n.kptfilePath(), r.f.Label(), err)
			failed(r, nil, err)
			return "", nil, err
		}
		if err != nil {
			failed(r, results, err)
		}
		r.checked = c
		return r.f.Label(), results, err
	}, func(i int) (fn.Step, error) {
		r := refs[i]
		s, err := o.Runner.Build(ctx, r.checked, r.n.dir)
		if err != nil {
			err = fmt.Errorf("%s: %s: %w", r.n.kptfilePath(), r.f.Label(), err)
			failed(r, nil, err)
			return fn.Step{}, err
		}
		_, how, _ := strings.Cut(s.Name, " (")
		s.Name = r.f.Label() + " (" + how
		return s, nil
	})
	if err != nil {
		return nil, invalid, err
	}
	pins := make([]string, len(refs))
	for i, r := range refs {
		if r.validator {
			r.n.validators = append(r.n.validators, steps[i])
		} else {
			r.n.mutators = append(r.n.mutators, steps[i])
		}
		pins[i] = r.checked.Pin()
	}
	return pins, nil, nil
}

func (n *node) kptfilePath() string {
	return path.Join(n.rel, KptfileName)
}

// staticError is a step that fails the checks kpt makes when it reads a Kptfile (a configPath that
// is absolute, leaves the package or names no single resource): kpt refuses such a package before
// rendering and writes no status.
type staticError struct{ err error }

func (e *staticError) Error() string { return e.err.Error() }
func (e *staticError) Unwrap() error { return e.err }

// stepConfig is a step's functionConfig: the resource of its configPath (a file of the package
// itself, not of a subpackage, holding one resource), or a ConfigMap named function-input holding
// configMap, or none.
func stepConfig(n *node, f Function, items []*yaml.RNode, pkgs map[string]*node) (*yaml.RNode, error) {
	if len(f.ConfigMap) > 0 {
		cm := yaml.NewMapRNode(nil)
		if err := cm.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("v1"))); err != nil {
			return nil, err
		}
		if err := cm.PipeE(yaml.SetField("kind", yaml.NewStringRNode("ConfigMap"))); err != nil {
			return nil, err
		}
		if err := cm.SetName("function-input"); err != nil {
			return nil, err
		}
		cm.SetDataMap(f.ConfigMap)
		return cm, nil
	}
	if f.ConfigPath == "" {
		return nil, nil
	}
	where := fmt.Sprintf("%s: %s: configPath %q", n.kptfilePath(), f.Label(), f.ConfigPath)
	if path.IsAbs(f.ConfigPath) || filepath.IsAbs(f.ConfigPath) {
		return nil, &staticError{fmt.Errorf("%w: %s must be relative to the package", ErrInvalidKptfile, where)}
	}
	p := path.Clean(path.Join(n.rel, f.ConfigPath))
	if rel := strings.TrimPrefix(p, n.rel+"/"); n.rel != "" && rel == p || p == ".." || strings.HasPrefix(p, "../") {
		return nil, &staticError{fmt.Errorf("%w: %s is outside the package", ErrInvalidKptfile, where)}
	}
	if owner := ownerOf(pkgs, path.Dir(p)); owner != n.rel {
		return nil, fmt.Errorf("%w: %s is in the subpackage %s: a function config must be in the package's own directories", ErrInvalidKptfile, where, owner)
	}
	var found []*yaml.RNode
	for _, it := range items {
		if itemPath(it) == p {
			found = append(found, it)
		}
	}
	if len(found) != 1 {
		return nil, &staticError{fmt.Errorf("%w: %s must be a file of the package holding exactly one resource (found %d)", ErrInvalidKptfile, where, len(found))}
	}
	if found[0].GetName() == "" {
		return nil, &staticError{fmt.Errorf("%w: %s: the function config has no metadata.name", ErrInvalidKptfile, where)}
	}
	cfg, err := fn.StripInternal(found)
	if err != nil {
		return nil, err
	}
	return cfg[0], nil
}

// check resolves a step. An exec step runs that executable; an image step runs that image in a
// container, unless it is kpt's starlark function given a StarlarkRun (run in-process), or the user
// prefers exec or starlark and a trusted catalog lists the image with that runtime; a step with only
// a configPath resolves through the catalogs by the config's apiVersion and kind.
func check(ctx context.Context, o Options, f Function, cfg *yaml.RNode, dir string) (*runner.Checked, []fn.Result, error) {
	res := &resolver.Resolution{}
	if cfg != nil {
		res.APIVersion, res.Kind = cfg.GetApiVersion(), cfg.GetKind()
	}
	switch {
	case f.Exec != "":
		args, err := splitCommand(f.Exec)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: exec: %v", ErrInvalidKptfile, err)
		}
		// a bare name is looked up on PATH, as a shell would; a path is relative to the package
		if !strings.Contains(args[0], "/") {
			if p, err := exec.LookPath(args[0]); err == nil {
				args[0] = p
			}
		} else if !filepath.IsAbs(args[0]) && !exists(filepath.Join(dir, args[0])) && exists(args[0]) {
			// not in the package: relative to the working directory, where kpt looks for it
			if p, err := filepath.Abs(args[0]); err == nil {
				args[0] = p
			}
		}
		res.Explicit = &resolver.Explicit{Source: "Kptfile exec", Exec: &resolver.ExplicitExec{Path: args[0], Args: args[1:]}}
	case f.Image != "":
		// the runtime the user prefers, as a trusted catalog lists the image with it, comes first:
		// kpt's starlark image too, whose executable then runs rather than the built-in interpreter
		found, err := o.Runner.ImageResolution(ctx, f.Image)
		if err != nil {
			return nil, nil, err
		}
		if found != nil {
			return o.Runner.CheckResolved(found, cfg)
		}
		if isStarlarkImage(f.Image) {
			if e, err := resolver.ExplicitRuntime(cfg); err == nil && e != nil && e.Starlark != nil && e.Starlark.Script != "" {
				res.Explicit = e
				break
			}
		}
		res.Explicit = &resolver.Explicit{Source: "Kptfile image", Container: &resolver.ExplicitContainer{Image: f.Image}}
	default:
		if cfg == nil {
			return nil, nil, fmt.Errorf("%w: a step without image or exec needs a configPath", ErrInvalidKptfile)
		}
		return o.Runner.Check(ctx, cfg)
	}
	return o.Runner.CheckResolved(res, cfg)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// isStarlarkImage reports whether an image is kpt's starlark function (any registry, any tag).
func isStarlarkImage(image string) bool {
	ref, err := catalog.ParseImage(image)
	return err == nil && path.Base(ref.Name) == "starlark"
}

// hydrate renders one package as kpt's render_executor.go does: its subpackages first, then its
// own pipeline over its resources and everything its subpackages produced. Items keep kpt's form
// throughout (PkgPathAnnotation): a parent's pipeline sees a subpackage's resources with paths
// relative to the subpackage.
func hydrate(ctx context.Context, t *tree, n *node, items []*yaml.RNode, res *Result) ([]*yaml.RNode, error) {
	own := map[string][]*yaml.RNode{}
	for _, it := range items {
		rel := n.childOf(t.pkgRel(it))
		own[rel] = append(own[rel], it)
	}
	input := own[n.rel]
	for i, c := range n.children {
		out, err := hydrate(ctx, t, c, own[c.rel], res)
		if err != nil {
			if !res.save {
				return nil, err
			}
			// kpt.dev/save-on-render-failure: what the subpackage rendered, and the rest as read
			input = append(input, out...)
			for _, rest := range n.children[i+1:] {
				input = append(input, own[rest.rel]...)
			}
			return input, err
		}
		input = append(input, out...)
	}
	if len(n.mutators) == 0 && len(n.validators) == 0 {
		return input, nil
	}
	out, err := runPipeline(ctx, t, n, input, res)
	if err != nil {
		if !res.save {
			return nil, err
		}
		// kpt.dev/save-on-render-failure: the resources as the steps before the failure left them
		return out, err
	}
	return out, nil
}

// childOf is the package among n and its direct subpackages that the package rel (a slash path
// from the root) belongs to: the subpackage it is, or is below, else n.
func (n *node) childOf(rel string) string {
	for _, c := range n.children {
		if rel == c.rel || strings.HasPrefix(rel, c.rel+"/") {
			return c.rel
		}
	}
	return n.rel
}

// holds reports whether an item is the resource of file p (clean, relative to the package) of n
// itself, as kpt matches a step's configPath: package path and path.
func (n *node) holds(it *yaml.RNode, p string) bool {
	return itemPath(it) == p && it.GetAnnotations()[PkgPathAnnotation] == n.abs
}

// within reports whether the package rel is n or below it.
func (n *node) within(rel string) bool {
	return n.rel == "" || rel == n.rel || strings.HasPrefix(rel, n.rel+"/")
}

// hydrateBFS renders the packages top-down (the root first, then its subpackages level by level,
// in directory order), each pipeline over the resources of the package and of every package
// below it, as they are at that point.
func hydrateBFS(ctx context.Context, t *tree, root *node, items []*yaml.RNode, res *Result) ([]*yaml.RNode, error) {
	state := items
	queue := []*node{root}
	for len(queue) > 0 {
		n := queue[0]
		queue = append(queue[1:], n.children...)
		if len(n.mutators) == 0 && len(n.validators) == 0 {
			continue
		}
		var in, rest []*yaml.RNode
		for _, it := range state {
			if n.within(t.pkgRel(it)) {
				in = append(in, it)
			} else {
				rest = append(rest, it)
			}
		}
		out, err := runPipeline(ctx, t, n, in, res)
		if err != nil {
			if !res.save {
				return nil, err
			}
			return append(rest, out...), err
		}
		state = append(rest, out...)
	}
	return state, nil
}

// PkgPathAnnotation names, on each resource during a render, the directory of the package it
// belongs to (kpt's internal.config.kubernetes.io/package-path, an absolute path); its path and
// index annotations are relative to that package. Functions see it, as kpt sends it, and a resource
// a function creates belongs to the package whose pipeline ran the function. It is never written.
const PkgPathAnnotation = "internal.config.kubernetes.io/package-path"

// tree maps the packages' absolute directories, which the items carry, back to the packages.
type tree struct {
	root  string           // the root package's absolute directory
	byAbs map[string]*node // every package by its absolute directory
	byRel map[string]*node // and by its slash path from the root
}

func newTree(all []*node) (*tree, error) {
	t := &tree{byAbs: map[string]*node{}, byRel: map[string]*node{}}
	for _, n := range all {
		abs, err := filepath.Abs(n.dir)
		if err != nil {
			return nil, err
		}
		n.abs = abs
		t.byAbs[abs], t.byRel[n.rel] = n, n
		if n.rel == "" {
			t.root = abs
		}
	}
	return t, nil
}

// pkgRel is the package an item belongs to, as a slash path from the root ("" for the root): the
// package its PkgPathAnnotation names. settle has checked every package path a step returned.
func (t *tree) pkgRel(it *yaml.RNode) string {
	rel, err := t.relOf(it.GetAnnotations()[PkgPathAnnotation])
	if err != nil {
		return ""
	}
	return rel
}

// toPackages puts the items read from the package (paths relative to the root) into kpt's form,
// as kpt's pkg.LocalResources reads each package: the path relative to the package that holds
// the file (the deepest one at or above its directory), and that package's PkgPathAnnotation.
func (t *tree) toPackages(items []*yaml.RNode) error {
	for _, it := range items {
		p := itemPath(it)
		owner := t.byRel[ownerOf(t.byRel, path.Dir(path.Clean(p)))]
		if owner.rel != "" {
			if err := setItemPath(it, strings.TrimPrefix(path.Clean(p), owner.rel+"/")); err != nil {
				return err
			}
		}
		if err := it.PipeE(yaml.SetAnnotation(PkgPathAnnotation, owner.abs)); err != nil {
			return err
		}
	}
	return nil
}

// relOf is a package path as a slash path from the root. Like kpt's pathRelToRoot, it must be the
// root or a directory below it.
func (t *tree) relOf(abs string) (string, error) {
	if abs == "" {
		return "", nil
	}
	if n, ok := t.byAbs[abs]; ok {
		return n.rel, nil
	}
	rel, err := filepath.Rel(t.root, abs)
	if err != nil || !filepath.IsAbs(abs) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: package path %q is not the root package %s or a directory below it", fn.ErrInvalidPackage, abs, t.root)
	}
	if rel = filepath.ToSlash(rel); rel == "." {
		rel = ""
	}
	return rel, nil
}

// settle gives the items a step returned what kpt's function runner gives them (pkg/fn/runtime
// runner.go): the package path of the package whose pipeline ran the step, on an item that has
// none (one the function created), and it refuses a package path outside the root. A path that
// leads out of the item's package has already failed the step (fn.RunInPackage, kpt's
// enforcePathInvariants); one path and index twice is refused when the package is written.
func (t *tree) settle(items []*yaml.RNode, n *node) error {
	for _, it := range items {
		abs := it.GetAnnotations()[PkgPathAnnotation]
		if abs == "" {
			if err := it.PipeE(yaml.SetAnnotation(PkgPathAnnotation, n.abs)); err != nil {
				return err
			}
		} else if _, err := t.relOf(abs); err != nil {
			return fmt.Errorf("%s: %w", describe(it), err)
		}
	}
	return nil
}

// toRoot makes the items' paths relative to the root package again and drops their package path, as
// kpt's adjustRelPath does once every pipeline has run: the path joined to the package's path from
// the root. An item without a path (a function made it where the items had none) gets, in a
// subpackage, the file kpt's function runner gives it there.
func (t *tree) toRoot(items []*yaml.RNode) error {
	for _, it := range items {
		anns := it.GetAnnotations()
		abs := anns[PkgPathAnnotation]
		rel := ""
		if abs != "" {
			var err error
			if rel, err = t.relOf(abs); err != nil {
				return fmt.Errorf("%s: %w", describe(it), err)
			}
		}
		if err := it.PipeE(yaml.ClearAnnotation(PkgPathAnnotation)); err != nil {
			return err
		}
		p := itemPath(it)
		if p == "" {
			if rel == "" {
				continue
			}
			p = fn.DefaultPath(it)
		}
		dir := rel
		if dir == "" {
			dir = "."
		}
		if joined := path.Join(dir, path.Clean(p)); joined != p {
			if err := setItemPath(it, joined); err != nil {
				return err
			}
		}
	}
	return nil
}

func describe(n *yaml.RNode) string { return n.GetKind() + "/" + n.GetName() }

// runPipeline runs a package's mutators, then its validators, over items (paths relative to the
// package). The Kptfile and local-config resources are part of the input, as kpt gives them
// (a step's selectors and exclude decide what it sees).
func runPipeline(ctx context.Context, t *tree, n *node, items []*yaml.RNode, res *Result) ([]*yaml.RNode, error) {
	input := items
	for i, s := range n.mutators {
		f := n.kf.Pipeline.Mutators[i]
		if err := refreshConfig(&s, f, n, input); err != nil {
			return input, fmt.Errorf("%s: %w", n.kptfilePath(), err)
		}
		seen, rest := f.partition(input)
		if run, err := f.runs(seen); err != nil || !run {
			if err != nil {
				res.Status.MutationSteps = append(res.Status.MutationSteps, notStarted(f, displayImage(f.Image), err))
				return input, fmt.Errorf("%s: %s: %w", n.kptfilePath(), f.Label(), err)
			}
			res.Status.MutationSteps = append(res.Status.MutationSteps, skipped(f))
			continue
		}
		out, runs, err := fn.RunInPackage(ctx, []fn.Step{s}, seen)
		res.Runs = append(res.Runs, runs...)
		res.Status.MutationSteps = append(res.Status.MutationSteps, ranStatus(f, runs, err))
		if err != nil {
			// what the steps before left, for kpt.dev/save-on-render-failure
			return input, fmt.Errorf("%s: %w", n.kptfilePath(), err)
		}
		if err := t.settle(out, n); err != nil {
			err = fmt.Errorf("%s: %w", n.kptfilePath(), err)
			res.Status.RejectLast(err)
			return input, err
		}
		input = append(out, rest...)
	}
	for i, s := range n.validators {
		f := n.kf.Pipeline.Validators[i]
		if err := refreshConfig(&s, f, n, input); err != nil {
			return input, fmt.Errorf("%s: %w", n.kptfilePath(), err)
		}
		seen, _ := f.partition(input)
		if run, err := f.runs(seen); err != nil || !run {
			if err != nil {
				res.Status.ValidationSteps = append(res.Status.ValidationSteps, notStarted(f, displayImage(f.Image), err))
				return input, fmt.Errorf("%s: %s: %w", n.kptfilePath(), f.Label(), err)
			}
			res.Status.ValidationSteps = append(res.Status.ValidationSteps, skipped(f))
			continue
		}
		// a validator checks the package's resources, not its own functionConfig (as kpt)
		own := ""
		if f.ConfigPath != "" {
			own = path.Clean(f.ConfigPath)
		}
		copies := make([]*yaml.RNode, 0, len(seen))
		for _, it := range seen {
			if own == "" || !n.holds(it, own) {
				copies = append(copies, it.Copy())
			}
		}
		out, runs, err := fn.RunInPackage(ctx, []fn.Step{s}, copies)
		res.Runs = append(res.Runs, runs...)
		res.Status.ValidationSteps = append(res.Status.ValidationSteps, ranStatus(f, runs, err))
		if err != nil {
			return input, fmt.Errorf("%s: %w", n.kptfilePath(), err)
		}
		// kpt checks a validator's output as any function's, then discards it
		if err := t.settle(out, n); err != nil {
			err = fmt.Errorf("%s: %w", n.kptfilePath(), err)
			res.Status.RejectLast(err)
			return input, err
		}
	}
	return input, nil
}

// refreshConfig gives a step its configPath's resource as the steps before it left it (as kpt
// does: a function may update the config of a later one): the resource of that path in the step's
// own package, with the annotations it has among the items (its path and index, relative to the
// package, and the package path), as kpt's refreshFnConfig hands the function that very resource.
// A resource the function makes without a path then goes to the config's directory (fn.Run).
func refreshConfig(s *fn.Step, f Function, n *node, items []*yaml.RNode) error {
	if f.ConfigPath == "" {
		return nil
	}
	want := path.Clean(f.ConfigPath)
	for _, it := range items {
		if n.holds(it, want) {
			s.Config = it.Copy()
			return nil
		}
	}
	return nil
}

// ranStatus records a step that was run: from its function results, or, when it has none, as a
// step that could not start.
func ranStatus(f Function, runs []fn.FunctionResults, err error) StepStatus {
	image := displayImage(f.Image)
	if len(runs) == 0 {
		if err == nil {
			return StepStatus{Name: f.Name, Image: image, Exec: f.Exec}
		}
		return notStarted(f, image, err)
	}
	run := runs[len(runs)-1]
	// A step whose output was refused (a path leaving the package) has the refusal as its last
	// result in results.yaml; kpt records it in the status as the step's execution error.
	var rej *fn.RejectedError
	if n := len(run.Results); errors.As(err, &rej) && n > 0 && run.Results[n-1].Message == rej.Error() {
		s := stepStatus(f, image, fn.FunctionResults{Function: run.Function, ExitCode: run.ExitCode, Stderr: run.Stderr, Results: run.Results[:n-1]})
		s.ExecutionError = rej.Error()
		return s
	}
	return stepStatus(f, image, run)
}

// displayImage is an image as kpt names it in the render status: with the tag latest when it has
// neither tag nor digest.
func displayImage(image string) string {
	if image == "" {
		return ""
	}
	if ref, err := catalog.ParseImage(image); err == nil && ref.Tag == "" && ref.Digest == "" {
		return image + ":latest"
	}
	return image
}

// splitCommand splits an exec step into the executable and its arguments the way a POSIX shell
// splits words: blanks separate them, single quotes keep everything, double quotes keep everything
// but a backslash before ", \\ or $, and a backslash outside quotes escapes the next character.
// Nothing is expanded and no shell runs.
func splitCommand(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated double quote")
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	if len(args) == 0 {
		return nil, errors.New("empty command")
	}
	return args, nil
}

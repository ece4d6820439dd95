// Package upgrade finds the function steps of many packages (Kptfile pipelines, subpackages
// included; Kustomization generators, transformers and validators; Compositions), compares what
// each runs with the newest version the trusted catalogs list, and rewrites the steps where the
// upgrade is safe: the step's functionConfig validates against the new version's schema, and
// catalog/diff finds nothing breaking between the two versions. A rewrite changes the bytes of
// the one value it replaces (fn.EditScalars), pinned by digest; every other step is left as it
// is, with the reason. docs/upgrade.md is the user's page.
package upgrade

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/internal/atomicfile"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// Options configure a scan or an upgrade.
type Options struct {
	// Resolver holds the catalogs (--catalog, --trusted-catalog); every one of them is read.
	Resolver *resolver.Resolver
	// ResolverFor returns the resolver of the steps of a Kustomization or Composition that lists
	// catalogs of its own: Resolver's catalogs, then these (declared says how the file wrote each
	// local one, which --trusted-catalog may name). Nil passes over the catalogs files list.
	ResolverFor func(catalogs []string, declared map[string][]string) (*resolver.Resolver, error)
	// Runner checks a config against a version's schema (runner.CheckResolved); nil makes one
	// over Resolver.
	Runner *runner.Runner
	// To is how far an upgrade may go: Patch, Minor or Latest; None means Minor.
	To Level
	// Only keeps the steps of these functions (group/Kind); empty keeps all.
	Only []string
	// Write applies the upgrades; without it, Upgrade plans them and returns the diffs.
	Write bool
	// Workers bounds how many units are read at once; 0 means GOMAXPROCS.
	Workers int
}

// Status is what became of a step.
type Status string

// The statuses.
const (
	// UpToDate: nothing newer is listed (within --to, for an upgrade).
	UpToDate Status = "up-to-date"
	// Outdated: a newer version is listed (fn outdated).
	Outdated Status = "outdated"
	// Unknown: what the step runs cannot be compared with the catalogs (Step.Note says why).
	Unknown Status = "unknown"
	// Upgraded: the step is rewritten to Step.To (planned only, with a dry run).
	Upgraded Status = "upgraded"
	// Held: a newer version is listed, and none that --to allows is safe (Step.Reasons say why).
	Held Status = "held"
)

// Version is a version of a function as a step names it.
type Version struct {
	// Version is the image's tag, or the config's API version for a step found by its kind.
	Version string `json:"version,omitempty"`
	// Ref is what runs: the image pinned by digest, the executable's sha256, the apiVersion.
	Ref string `json:"ref,omitempty"`
	// Catalog lists it (the first in search order).
	Catalog string `json:"catalog,omitempty"`
}

// Reason is why a version was not applied.
type Reason struct {
	Version string `json:"version"`
	// Kind is "schema" (the config does not validate; File and Line point at the field),
	// "breaking" (catalog diff; Changes are the breaking ones) or "unsupported".
	Kind    string         `json:"kind"`
	Message string         `json:"message"`
	File    string         `json:"file,omitempty"`
	Line    int            `json:"line,omitempty"`
	Changes []BreakingInfo `json:"changes,omitempty"`
}

// BreakingInfo is one breaking change of catalog diff, as it prints it.
type BreakingInfo struct {
	Kind    string `json:"kind"`
	Subject string `json:"subject"`
	Reason  string `json:"reason"`
}

// Step is one function step and what became of it.
type Step struct {
	// Step is where it is declared: "app/Kptfile pipeline.mutators[0]".
	Step string `json:"step"`
	Name string `json:"name,omitempty"`
	// File and Line are where the function is named (the value a rewrite changes).
	File string `json:"file"`
	Line int    `json:"line"`
	// Source is how the step names its function: image, exec or kind (its config's apiVersion and
	// kind, resolved through the catalogs).
	Source   string   `json:"source"`
	Function string   `json:"function,omitempty"`
	Current  *Version `json:"current,omitempty"`
	Newest   *Version `json:"newest,omitempty"`
	// Available is the level of the newest version against the current one.
	Available Level  `json:"available,omitempty"`
	Status    Status `json:"status"`
	// To is the version an upgrade rewrites the step to.
	To      *Version `json:"to,omitempty"`
	Reasons []Reason `json:"reasons,omitempty"`
	Note    string   `json:"note,omitempty"`

	site *site
	cur  *entry
	// edit is the rewrite, once chosen
	edit *place
}

// FileChange is a file an upgrade rewrites, with its unified diff.
type FileChange struct {
	Path string `json:"path"`
	Diff string `json:"diff"`
	data []byte
	mode uint32
}

// Report is the outcome of a scan or an upgrade.
type Report struct {
	Steps   []*Step      `json:"steps"`
	Files   []FileChange `json:"files,omitempty"`
	Summary Summary      `json:"summary"`
	// DryRun: the files were not written.
	DryRun bool `json:"dryRun,omitempty"`
}

// Summary counts the steps by status.
type Summary struct {
	Steps    int `json:"steps"`
	UpToDate int `json:"upToDate"`
	Outdated int `json:"outdated"`
	Unknown  int `json:"unknown"`
	Upgraded int `json:"upgraded"`
	Held     int `json:"held"`
	Files    int `json:"files"`
}

// List lists every step under the paths with its current and newest version (fn outdated).
func List(ctx context.Context, paths []string, o Options) (*Report, error) {
	u, err := newRun(ctx, o)
	if err != nil {
		return nil, err
	}
	steps, err := u.scan(ctx, paths, false)
	if err != nil {
		return nil, err
	}
	return u.report(steps, nil), nil
}

// Upgrade rewrites the steps under the paths that can safely be upgraded, within o.To, and says
// why each other outdated step is held. Nothing is written when a file cannot be read; with
// o.Write false nothing is written at all, and the report holds the diffs.
func Upgrade(ctx context.Context, paths []string, o Options) (*Report, error) {
	u, err := newRun(ctx, o)
	if err != nil {
		return nil, err
	}
	steps, err := u.scan(ctx, paths, true)
	if err != nil {
		return nil, err
	}
	changes, err := u.plan(steps)
	if err != nil {
		return nil, err
	}
	rep := u.report(steps, changes)
	rep.DryRun = !o.Write
	if o.Write {
		for _, c := range changes {
			if err := atomicfile.WriteFile(c.Path, c.data, fsMode(c.mode)); err != nil {
				return rep, fmt.Errorf("write %s: %w", c.Path, err)
			}
		}
	}
	return rep, nil
}

// run is one call: the catalogs read once, every file read once.
type run struct {
	o     Options
	x     *index
	files *files

	mu      sync.Mutex
	diffs   map[[2]*entry][]BreakingInfo
	indexes map[string]*lazyIndex // by the catalogs a file lists
}

type lazyIndex struct {
	once sync.Once
	x    *index
	err  error
}

// indexFor is the index of the catalogs a step resolves through.
func (u *run) indexFor(ctx context.Context, st *site) (*index, error) {
	if len(st.catalogs) == 0 || u.o.ResolverFor == nil {
		return u.x, nil
	}
	key := strings.Join(st.catalogs, "\x00")
	u.mu.Lock()
	l := u.indexes[key]
	if l == nil {
		l = &lazyIndex{}
		u.indexes[key] = l
	}
	u.mu.Unlock()
	l.once.Do(func() {
		r, err := u.o.ResolverFor(st.catalogs, st.declared)
		if err != nil {
			l.err = err
			return
		}
		l.x, l.err = newIndex(ctx, r)
	})
	return l.x, l.err
}

func newRun(ctx context.Context, o Options) (*run, error) {
	if o.Resolver == nil {
		return nil, errors.New("upgrade: no resolver")
	}
	if o.To == None {
		o.To = Minor
	}
	if o.Runner == nil {
		o.Runner = runner.New(runner.Options{Resolver: o.Resolver})
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	x, err := newIndex(ctx, o.Resolver)
	if err != nil {
		return nil, err
	}
	return &run{o: o, x: x, files: &files{}, diffs: map[[2]*entry][]BreakingInfo{}, indexes: map[string]*lazyIndex{}}, nil
}

// scan finds the steps of every unit and compares each with the catalogs; with choose, it also
// picks each outdated step's upgrade.
func (u *run) scan(ctx context.Context, paths []string, choose bool) ([]*Step, error) {
	units, err := findUnits(paths)
	if err != nil {
		return nil, err
	}
	sc := &scanner{files: u.files}
	per := make([][]*Step, len(units))
	errs := make([]error, len(units))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(u.o.Workers, max(len(units), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				sites, err := sc.scan(units[i])
				if err != nil {
					errs[i] = err
					continue
				}
				for _, st := range sites {
					if st.x, errs[i] = u.indexFor(ctx, st); errs[i] != nil {
						break
					}
					s := u.compare(st)
					if !u.wanted(s) {
						continue
					}
					if choose {
						u.choose(s)
					}
					per[i] = append(per[i], s)
				}
			}
		}()
	}
	for i := range units {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []*Step
	for _, s := range per {
		out = append(out, s...)
	}
	return out, nil
}

func (u *run) wanted(s *Step) bool {
	return len(u.o.Only) == 0 || slices.Contains(u.o.Only, s.Function)
}

// compare finds what a step runs now and the newest version listed.
func (u *run) compare(st *site) *Step {
	s := &Step{Step: st.step, Name: st.name, File: st.file, Line: st.line, Source: st.source, site: st, Status: Unknown}
	switch st.source {
	case "image":
		u.compareImage(s)
	case "exec":
		u.compareExec(s)
	default:
		u.compareKind(s)
	}
	if st.problem != "" && s.Note == "" {
		s.Note = st.problem
	}
	return s
}

func (u *run) compareImage(s *Step) {
	st := s.site
	ref, err := catalog.ParseImage(st.x.expand(st.image))
	if err != nil {
		s.Note = fmt.Sprintf("image %q: %v", st.image, err)
		return
	}
	listed := st.x.byRepo[ref.Name]
	if len(listed) == 0 {
		s.Note = "no trusted catalog lists " + ref.Name
		return
	}
	s.Function = listed[0].id()
	all := releases(listed, true)
	var cur *entry
	var curVer *semver.Version
	tag := ref.Tag
	constraint, err := semver.NewConstraint(st.tag)
	if st.tag != "" {
		if _, exact := semver.NewVersion(st.tag); exact == nil || err != nil {
			// a version, or a tag that is no constraint: render runs that tag
			tag, constraint = st.tag, nil
		}
	}
	switch {
	case constraint != nil && st.tag != "":
		// a Kptfile tag range: render runs the highest catalog version it allows
		for _, e := range all {
			if constraint.Check(e.release) {
				cur, curVer = e, e.release
				break
			}
		}
		if cur == nil {
			s.Note = fmt.Sprintf("no version the trusted catalogs list matches tag %q", st.tag)
			return
		}
	case ref.Digest != "" && st.tag == "":
		for _, e := range listed {
			if e.image.Digest == ref.Digest {
				cur = e
				break
			}
		}
		if cur != nil && cur.release != nil {
			curVer = cur.release
		} else if tag != "" {
			curVer, _ = semver.NewVersion(tag)
		}
	default:
		if tag == "" {
			tag = "latest"
		}
		for _, e := range listed {
			if e.image.Tag == tag {
				cur = e
				break
			}
		}
		curVer, _ = semver.NewVersion(tag)
	}
	s.cur = cur
	s.Current = &Version{Ref: st.image}
	if cur != nil {
		s.Current.Catalog = cur.res.Catalog
		s.Function = cur.id()
	}
	if curVer != nil {
		s.Current.Version = curVer.Original()
	} else if tag != "" {
		s.Current.Version = tag
	}
	candidates := releases(listed, curVer != nil && curVer.Prerelease() != "")
	if len(candidates) == 0 {
		s.Note = "the trusted catalogs list " + ref.Name + " at no version pinned by digest"
		return
	}
	newest := candidates[0]
	s.Newest = &Version{Version: newest.release.Original(), Ref: newest.pinned(ref.Name), Catalog: newest.res.Catalog}
	if curVer == nil {
		s.Note = fmt.Sprintf("tag %q is no version: nothing to compare", tag)
		return
	}
	s.Available = semverLevel(curVer, newest.release)
	s.Status = UpToDate
	if s.Available != None {
		s.Status = Outdated
	}
}

func (u *run) compareExec(s *Step) {
	st := s.site
	if st.execPath == "" {
		s.Note = "exec names no executable"
		return
	}
	sum, err := u.files.hash(st.execPath)
	if err != nil {
		s.Note = fmt.Sprintf("exec %s: %v", st.execPath, err)
		return
	}
	s.Current = &Version{Ref: "sha256:" + sum}
	listed := st.x.bySHA[sum]
	if len(listed) == 0 {
		s.Note = "no trusted catalog lists an executable with this sha256"
		return
	}
	cur := listed[0]
	s.cur, s.Function = cur, cur.id()
	s.Current.Version, s.Current.Catalog = versionName(cur), cur.res.Catalog
	newest := newestOf(st.x.byKind[cur.id()], cur)
	s.Newest = &Version{Version: versionName(newest), Ref: execRef(newest), Catalog: newest.res.Catalog}
	s.Available = entryLevel(cur, newest)
	s.Status = UpToDate
	if s.Available != None {
		s.Status = Outdated
	}
}

// versionName names an entry's version: its image tag when it has one, else its API version.
func versionName(e *entry) string {
	if e.release != nil {
		return e.release.Original()
	}
	return e.res.APIVersion
}

// execRef is what an entry runs as an executable on this machine: its sha256.
func execRef(e *entry) string {
	if ex := e.res.Version.Runtime.Exec; ex != nil {
		if p, ok := ex.Platform(runtime.GOOS, runtime.GOARCH); ok {
			return "sha256:" + p.SHA256
		}
	}
	return ""
}

// newestOf is the newest version of a function: by release where both have one, else by API
// version priority.
func newestOf(list []*entry, cur *entry) *entry {
	best := cur
	for _, e := range list {
		if entryLevel(best, e) != None {
			best = e
		}
	}
	return best
}

// entryLevel compares two versions of a function: by their releases when both have one, else by
// API version.
func entryLevel(a, b *entry) Level {
	if a.release != nil && b.release != nil {
		return semverLevel(a.release, b.release)
	}
	return kubeLevel(a.res.Version.Name, b.res.Version.Name)
}

func (u *run) compareKind(s *Step) {
	st := s.site
	if st.cfg == nil {
		if s.Note == "" {
			s.Note = "no config names the function"
		}
		return
	}
	apiVersion, kind := st.cfg.node.GetApiVersion(), st.cfg.node.GetKind()
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		s.Note = fmt.Sprintf("apiVersion %q has no group", apiVersion)
		return
	}
	s.Function = group + "/" + kind
	s.Current = &Version{Version: version, Ref: apiVersion}
	listed := st.x.byKind[s.Function]
	if len(listed) == 0 {
		s.Note = "no trusted catalog lists " + s.Function
		return
	}
	for _, e := range listed {
		if e.res.Version.Name == version {
			s.cur = e
			s.Current.Catalog = e.res.Catalog
			break
		}
	}
	versions := apiVersions(listed)
	if len(versions) == 0 {
		s.Note = "the trusted catalogs list no Kubernetes API version of " + s.Function
		return
	}
	newest := versions[0]
	s.Newest = &Version{Version: newest.res.Version.Name, Ref: newest.res.APIVersion, Catalog: newest.res.Catalog}
	if s.cur == nil {
		s.Note = fmt.Sprintf("no trusted catalog lists %s at version %s", s.Function, version)
		return
	}
	s.Available = kubeLevel(version, newest.res.Version.Name)
	s.Status = UpToDate
	if s.Available != None {
		s.Status = Outdated
	}
}

// report orders the steps and counts them.
func (u *run) report(steps []*Step, changes []FileChange) *Report {
	sort.SliceStable(steps, func(i, j int) bool {
		if steps[i].File != steps[j].File {
			return steps[i].File < steps[j].File
		}
		return steps[i].Line < steps[j].Line
	})
	r := &Report{Steps: steps, Files: changes}
	if r.Steps == nil {
		r.Steps = []*Step{}
	}
	for _, s := range steps {
		r.Summary.Steps++
		switch s.Status {
		case UpToDate:
			r.Summary.UpToDate++
		case Outdated:
			r.Summary.Outdated++
		case Unknown:
			r.Summary.Unknown++
		case Upgraded:
			r.Summary.Upgraded++
		case Held:
			r.Summary.Held++
		}
	}
	r.Summary.Files = len(changes)
	for _, s := range steps {
		// what the steps were found in (parsed configs) is not kept with the report
		s.site, s.cur, s.edit = nil, nil, nil
	}
	return r
}

// relPath is a path as the report shows it.
func relPath(p string) string { return filepath.ToSlash(p) }

package upgrade

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/diff"
	"github.com/krm-catalog/krm-catalog/fn"
)

// choose picks an outdated step's upgrade: the newest version --to allows that is safe, trying
// the next older one when it is not. A step none of whose versions is safe is held, with the
// reasons of each.
func (u *run) choose(s *Step) {
	if s.Status != Outdated {
		return
	}
	st := s.site
	hold := func(kind, msg string) {
		s.Status = Held
		s.Reasons = append(s.Reasons, Reason{Version: s.Newest.Version, Kind: kind, Message: msg})
	}
	var candidates []*entry
	var value func(*entry) string
	switch st.source {
	case "exec":
		hold("unsupported", fmt.Sprintf("the step runs a local executable (%s): replace it with %s's (%s), or drop exec and let the catalogs resolve the config's kind", st.execPath, s.Newest.Version, s.Newest.Ref))
		return
	case "image":
		if st.tag != "" {
			hold("unsupported", fmt.Sprintf("the step's tag %q chooses the version when it renders: change the tag to upgrade", st.tag))
			return
		}
		written, err := catalog.ParseImage(st.image)
		if err != nil {
			hold("unsupported", err.Error())
			return
		}
		ref, _ := catalog.ParseImage(st.x.expand(st.image))
		cur, _ := versionOf(s.Current)
		for _, c := range releases(st.x.byRepo[ref.Name], cur != nil && cur.Prerelease() != "") {
			if within(semverLevel(cur, c.release), u.o.To) {
				candidates = append(candidates, c)
			}
		}
		// the repository as the step writes it: a short name stays short
		value = func(c *entry) string { return c.pinned(written.Name) }
	default:
		for _, c := range apiVersions(st.x.byKind[s.Function]) {
			if within(kubeLevel(s.Current.Version, c.res.Version.Name), u.o.To) {
				candidates = append(candidates, c)
			}
		}
		value = func(c *entry) string { return c.res.APIVersion }
	}
	if len(candidates) == 0 {
		s.Status = UpToDate
		s.Note = fmt.Sprintf("%s is a %s upgrade: beyond --to %s", s.Newest.Version, s.Available, u.o.To)
		return
	}
	switch {
	case s.cur == nil:
		hold("unsupported", fmt.Sprintf("no trusted catalog lists the version the step runs (%s), so catalog diff has nothing to compare with: trust the catalog that lists it too", s.Current.Version))
		return
	case st.at == nil:
		hold("unsupported", "no place in the files to write the new version")
		return
	case st.problem != "":
		hold("unsupported", st.problem)
		return
	}
	for _, c := range candidates {
		reasons := u.check(s, c)
		if len(reasons) > 0 {
			s.Reasons = append(s.Reasons, reasons...)
			continue
		}
		s.Status = Upgraded
		s.To = &Version{Version: candidateName(st.source, c), Ref: value(c), Catalog: c.res.Catalog}
		p := *st.at
		p.edit = p.with(value(c))
		s.edit = &p
		return
	}
	s.Status = Held
}

func candidateName(source string, c *entry) string {
	if source == "image" {
		return c.release.Original()
	}
	return c.res.Version.Name
}

// check says why upgrading a step to version c would not be safe: its config does not validate
// against c's schema (the runner's check), or catalog diff finds a breaking change between the
// version the step runs and c.
func (u *run) check(s *Step, c *entry) []Reason {
	name := candidateName(s.site.source, c)
	var out []Reason
	if cfg := s.site.cfg; cfg != nil {
		node := cfg.node
		switch {
		case s.site.source == "kind":
			node = node.Copy()
			node.SetApiVersion(c.res.APIVersion)
		case node.GetKind() == s.cur.res.Kind && node.GetApiVersion() == s.cur.res.APIVersion && c.res.APIVersion != s.cur.res.APIVersion:
			// the runner would not check a config of another API version, and the function
			// would be given one
			return []Reason{{Version: name, Kind: "unsupported", File: cfg.file, Line: cfg.lineOf("apiVersion"),
				Message: fmt.Sprintf("%s serves %s, and the config is %s: upgrade the config with it", name, c.res.APIVersion, s.cur.res.APIVersion)}}
		}
		_, results, err := u.o.Runner.CheckResolved(c.res, node)
		for _, r := range results {
			line := cfg.lineOf("")
			if r.Field != nil {
				line = cfg.lineOf(r.Field.Path)
			}
			out = append(out, Reason{Version: name, Kind: "schema", Message: r.Message, File: cfg.file, Line: line})
		}
		if err != nil && len(results) == 0 {
			out = append(out, Reason{Version: name, Kind: "schema", Message: err.Error()})
		}
	}
	if changes := u.breaking(s.cur, c); len(changes) > 0 {
		var msgs []string
		for _, ch := range changes {
			msgs = append(msgs, ch.Kind+" "+ch.Subject+": "+ch.Reason)
		}
		out = append(out, Reason{Version: name, Kind: "breaking", Message: strings.Join(msgs, "; "), Changes: changes})
	}
	return out
}

// breaking is what catalog diff finds breaking from version a of a function to version b: the two
// compared as one version of one catalog, so that what changes is the function's runtime and
// schema, not its place in a catalog.
func (u *run) breaking(a, b *entry) []BreakingInfo {
	key := [2]*entry{a, b}
	u.mu.Lock()
	got, ok := u.diffs[key]
	u.mu.Unlock()
	if ok {
		return got
	}
	one := func(e *entry) *catalog.Catalog {
		f := e.res.Function
		v := e.res.Version
		v.Name = a.res.Version.Name
		f.Versions = []catalog.Version{v}
		return &catalog.Catalog{Name: "compared", Functions: []catalog.Function{f}}
	}
	var out []BreakingInfo
	for _, c := range diff.Catalogs(one(a), one(b)) {
		if c.Breaking {
			// the function and version are the step's own: the subject is what in it changed
			c.Version = ""
			if c.Runtime != "" || c.Field != "" {
				c.Function = ""
			}
			out = append(out, BreakingInfo{Kind: string(c.Kind), Subject: c.Subject(), Reason: c.Reason})
		}
	}
	u.mu.Lock()
	u.diffs[key] = out
	u.mu.Unlock()
	return out
}

// plan applies the chosen rewrites to the files they touch, each file in one edit. A step whose
// rewrite cannot be made in place is held, with the reason; the others of its file still go.
func (u *run) plan(steps []*Step) ([]FileChange, error) {
	// by the file's absolute path: two packages may name one config by different paths
	byFile := map[string][]*Step{}
	for _, s := range steps {
		if s.Status == Upgraded {
			key := s.edit.file
			if abs, err := filepath.Abs(key); err == nil {
				key = abs
			}
			byFile[key] = append(byFile[key], s)
		}
	}
	var out []FileChange
	for _, list := range byFile {
		path := list[0].edit.file
		data, mode, err := u.files.read(path)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrInvalidInput, path, err)
		}
		edited, err := u.edit(data, list)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if string(edited) == string(data) {
			continue
		}
		out = append(out, FileChange{Path: relPath(path), Diff: unifiedDiff(relPath(path), data, edited), data: edited, mode: uint32(mode)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// edit makes the steps' edits to one file; a step whose edit fails alone is held.
func (u *run) edit(data []byte, list []*Step) ([]byte, error) {
	edits := func(list []*Step) []fn.ScalarEdit {
		var out []fn.ScalarEdit
		for _, s := range list {
			if s.Status == Upgraded {
				out = append(out, s.edit.edit)
			}
		}
		return out
	}
	edited, err := fn.EditScalars(data, edits(list)...)
	if err == nil {
		return edited, nil
	}
	if !errors.Is(err, fn.ErrNotEditable) {
		return nil, err
	}
	for _, s := range list {
		if _, err := fn.EditScalars(data, s.edit.edit); err != nil {
			s.Status, s.To, s.edit = Held, nil, nil
			s.Reasons = append(s.Reasons, Reason{Version: s.Newest.Version, Kind: "unsupported", Message: "cannot rewrite the step in place: " + err.Error()})
		}
	}
	return fn.EditScalars(data, edits(list)...)
}

func versionOf(v *Version) (*semver.Version, error) {
	if v == nil || v.Version == "" {
		return nil, errors.New("no version")
	}
	return semver.NewVersion(v.Version)
}

func fsMode(m uint32) fs.FileMode { return fs.FileMode(m) }

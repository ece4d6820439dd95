package release

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

const (
	mainModule  = "github.com/krm-catalog/krm-catalog"
	krmfnModule = mainModule + "/pkg/krmfn"
)

// repoRoot is the repository's top directory, two above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// writeModuleProxy writes a module proxy in the layout GOPROXY=file:// reads (the GOPROXY
// protocol's files) into dir: the CLI's module at version, and pkg/krmfn at the version the CLI's
// go.mod requires, both from the tree at root. It returns the GOPROXY value that puts it before
// the proxy the go command uses otherwise, for the other modules.
func writeModuleProxy(t *testing.T, root, dir, version string) string {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		t.Fatalf("parse go.mod: %v", err)
	}
	if len(mf.Replace) > 0 {
		t.Fatalf("go.mod has %d replace directive(s): go install MODULE@VERSION refuses it", len(mf.Replace))
	}
	krmfnVersion := ""
	for _, r := range mf.Require {
		if r.Mod.Path == krmfnModule {
			krmfnVersion = r.Mod.Version
		}
	}
	files := treeFiles(t, root)
	mods := []struct {
		path, version, dir string
	}{
		{mainModule, version, ""},
	}
	if krmfnVersion != "" {
		mods = append(mods, struct{ path, version, dir string }{krmfnModule, krmfnVersion, "pkg/krmfn"})
	}
	for _, m := range mods {
		writeProxyModule(t, root, dir, module.Version{Path: m.path, Version: m.version}, moduleFiles(files, m.dir))
	}
	upstream, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		t.Fatalf("go env GOPROXY: %v", err)
	}
	return "file://" + filepath.ToSlash(dir) + "," + strings.TrimSpace(string(upstream))
}

// treeFiles lists the files of the tree as git sees them (tracked, and new ones not ignored), so
// that build output and caches in the working tree are left out; without git, every file.
func treeFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var all []string
		werr := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				rel, _ := filepath.Rel(root, p)
				all = append(all, filepath.ToSlash(rel))
			}
			return nil
		})
		if werr != nil {
			t.Fatal(werr)
		}
		return all
	}
	var files []string
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		// a file deleted but not yet staged is listed and gone
		if fi, err := os.Lstat(filepath.Join(root, f)); err == nil && fi.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	return files
}

// moduleFiles is the files of the module at dir ("" for the root): those under it and in no
// module below it.
func moduleFiles(files []string, dir string) []string {
	nested := map[string]bool{}
	for _, f := range files {
		if path.Base(f) == "go.mod" && path.Dir(f) != "." {
			nested[path.Dir(f)] = true
		}
	}
	var out []string
	for _, f := range files {
		rel := f
		if dir != "" {
			if !strings.HasPrefix(f, dir+"/") {
				continue
			}
			rel = strings.TrimPrefix(f, dir+"/")
		}
		inner := false
		for d := path.Dir(f); d != "." && d != dir; d = path.Dir(d) {
			if nested[d] {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, rel)
		}
	}
	return out
}

// diskFile is a file of a module zip, read from disk.
type diskFile struct{ rel, abs string }

func (f diskFile) Path() string                 { return f.rel }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }

// writeProxyModule writes m's list, .info, .mod and .zip files under dir.
func writeProxyModule(t *testing.T, root, dir string, m module.Version, files []string) {
	t.Helper()
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	base := root
	if m.Path == krmfnModule {
		base = filepath.Join(root, "pkg", "krmfn")
	}
	vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	zfiles := make([]zip.File, 0, len(files))
	for _, f := range files {
		zfiles = append(zfiles, diskFile{rel: f, abs: filepath.Join(base, filepath.FromSlash(f))})
	}
	var z bytes.Buffer
	if err := zip.Create(&z, m, zfiles); err != nil {
		t.Fatalf("zip %s: %v", m, err)
	}
	gomod, err := os.ReadFile(filepath.Join(base, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"list":              []byte(m.Version + "\n"),
		m.Version + ".info": info,
		m.Version + ".mod":  gomod,
		m.Version + ".zip":  z.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("module proxy: %s (%d files, %d bytes zipped)", m, len(files), z.Len())
}

// goEnv is the environment of a go command run by the tests: this process's, with the
// overrides given, and no workspace file (go.work is the clone's, not a user's).
func goEnv(overrides ...string) []string {
	env := []string{"GOWORK=off", "GOTOOLCHAIN=local"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		keep := k != "GOWORK" && k != "GOTOOLCHAIN"
		for _, o := range overrides {
			if ok, _, _ := strings.Cut(o, "="); ok == k {
				keep = false
			}
		}
		if keep {
			env = append(env, kv)
		}
	}
	return append(env, overrides...)
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	t.Logf("%s %s (%s)", name, strings.Join(args, " "), time.Since(start).Round(time.Second))
	return out.String()
}

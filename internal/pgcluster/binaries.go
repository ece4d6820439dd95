package pgcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// binaries is a directory with PostgreSQL server programs.
type binaries struct {
	dir   string
	major string // as in PG_VERSION: "15", or "9.6"
}

// findBinaries returns the binaries in binDir, or found on the machine if
// binDir is "". If wantMajor is set, binaries of that major version are
// required.
func findBinaries(ctx context.Context, binDir, wantMajor string) (*binaries, error) {
	candidates := []string{binDir}
	if binDir == "" {
		candidates = searchDirs(ctx)
	}
	var found []*binaries
	for _, dir := range candidates {
		if !hasServerPrograms(dir) {
			continue
		}
		major, err := majorVersion(ctx, dir)
		if err != nil {
			return nil, err
		}
		b := &binaries{dir: dir, major: major}
		if wantMajor == "" || major == wantMajor {
			return b, nil
		}
		found = append(found, b)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%w (looked in %s)", ErrNoBinaries, strings.Join(candidates, ", "))
	}
	var have []string
	for _, b := range found {
		have = append(have, fmt.Sprintf("PostgreSQL %s in %s", b.major, b.dir))
	}
	return nil, fmt.Errorf("the data directory was created by PostgreSQL %s, but found only %s: install PostgreSQL %s (Debian: apt-get install postgresql-%s) or upgrade the data directory with pg_upgrade",
		wantMajor, strings.Join(have, ", "), wantMajor, wantMajor)
}

// searchDirs returns the directories that may hold server programs, best
// first: Debian's /usr/lib/postgresql/*/bin (newest version first), then
// `pg_config --bindir`, then the directory of pg_ctl on PATH.
func searchDirs(ctx context.Context) []string {
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(debian, func(a, b string) int {
		return -compareVersions(filepath.Base(filepath.Dir(a)), filepath.Base(filepath.Dir(b)))
	})
	dirs := debian
	if pgConfig, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.CommandContext(ctx, pgConfig, "--bindir").Output(); err == nil {
			dirs = append(dirs, strings.TrimSpace(string(out)))
		}
	}
	if pgCtl, err := exec.LookPath("pg_ctl"); err == nil {
		dirs = append(dirs, filepath.Dir(pgCtl))
	}
	var uniq []string
	for _, d := range dirs {
		if d = filepath.Clean(d); !slices.Contains(uniq, d) {
			uniq = append(uniq, d)
		}
	}
	if len(uniq) == 0 {
		return []string{"/usr/lib/postgresql/*/bin", "pg_config --bindir", "PATH"}
	}
	return uniq
}

func hasServerPrograms(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// majorVersion runs postgres -V, which prints e.g.
// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)".
func majorVersion(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "-V").Output()
	if err != nil {
		return "", fmt.Errorf("%s -V: %w", filepath.Join(dir, "postgres"), err)
	}
	_, v, ok := strings.Cut(string(out), "(PostgreSQL) ")
	if !ok {
		return "", fmt.Errorf("%s -V: unexpected output %q", filepath.Join(dir, "postgres"), out)
	}
	v, _, _ = strings.Cut(v, " ")
	parts := strings.Split(v, ".")
	n, err := strconv.Atoi(parts[0])
	if err != nil {
		return "", fmt.Errorf("%s -V: unexpected output %q", filepath.Join(dir, "postgres"), out)
	}
	if n < 10 && len(parts) > 1 {
		return parts[0] + "." + parts[1], nil // 9.6
	}
	return parts[0], nil
}

// compareVersions compares dotted version numbers such as "15" and "9.6".
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// FindTool returns the path of one of PostgreSQL's client programs (pg_dump, pg_restore), from the
// same places as the server programs, newest version first: a newer pg_dump reads older servers and
// a newer pg_restore reads older dumps, never the other way round.
func FindTool(ctx context.Context, name string) (string, error) {
	dirs := searchDirs(ctx)
	for _, dir := range dirs {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found in %s or PATH: install PostgreSQL's client programs (Debian: apt-get install postgresql-client)", name, strings.Join(dirs, ", "))
}

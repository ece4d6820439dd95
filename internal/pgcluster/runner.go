package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runner runs PostgreSQL programs, as the postgres system user when the
// effective user is root.
type runner struct {
	binDir string
	uid    int // -1: run as ourselves
	gid    int
	groups []uint32
	env    []string
}

func newRunner() (*runner, error) {
	r := &runner{uid: -1, gid: -1, env: os.Environ()}
	if os.Geteuid() != 0 {
		return r, nil
	}
	u, err := lookupPostgresUser()
	if err != nil {
		return nil, err
	}
	if r.uid, err = strconv.Atoi(u.Uid); err != nil {
		return nil, fmt.Errorf("uid of user postgres: %w", err)
	}
	if r.gid, err = strconv.Atoi(u.Gid); err != nil {
		return nil, fmt.Errorf("gid of user postgres: %w", err)
	}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("groups of user postgres: %w", err)
	}
	for _, g := range gids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			r.groups = append(r.groups, uint32(n))
		}
	}
	r.env = append(r.env, "HOME="+u.HomeDir, "USER=postgres", "LOGNAME=postgres")
	return r, nil
}

// output runs the program name from the binary directory and returns its
// combined output.
func (r *runner) output(ctx context.Context, name string, args ...string) (string, error) {
	return r.do(ctx, false, filepath.Join(r.binDir, name), args...)
}

// outputDetached is like output, but runs the program in its own process
// group, so that a server it spawns does not get the terminal's signals
// (Ctrl-C) meant for this process, which stops the server itself.
func (r *runner) outputDetached(ctx context.Context, name string, args ...string) (string, error) {
	return r.do(ctx, true, filepath.Join(r.binDir, name), args...)
}

func (r *runner) do(ctx context.Context, detached bool, path string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = "/"
	cmd.Env = r.env
	// A server spawned by pg_ctl writes to its log, not to our pipes; but
	// never hang on a pipe held open by a stray child.
	cmd.WaitDelay = 5 * time.Second
	setProcAttr(cmd, r, detached)
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			return "", fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		return string(out), fmt.Errorf("%s: %w: %s", filepath.Base(path), err, msg)
	}
	return string(out), nil
}

// mkdir creates dir with mode 0700 (and its missing parents with mode 0755)
// and hands it to the server's user. An existing dir is left alone.
func (r *runner) mkdir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return r.chown(dir)
}

func (r *runner) chown(dir string) error {
	if r.uid < 0 {
		return nil
	}
	return os.Chown(dir, r.uid, r.gid)
}

// checkAccess reports an error if the server's user cannot use dir.
func (r *runner) checkAccess(ctx context.Context, dir string) error {
	if r.uid < 0 {
		return nil
	}
	test, err := exec.LookPath("test")
	if err != nil {
		return nil // let the PostgreSQL programs report it
	}
	if _, err := r.do(ctx, false, test, "-w", dir, "-a", "-x", dir); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("user postgres cannot write to %s: as PostgreSQL refuses to run as root, the server runs as postgres, which needs access to the directory and its parents", dir)
	}
	return nil
}

// Package container runs KRM functions as container images with docker or podman, locked down:
// no network, the user nobody, no privilege escalation, no capabilities, a read-only root file
// system, bounded memory and processes, the image pinned by digest. Network and mounts are granted
// only when the definition requires them and the user allowed them.
package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/runtime/internal/proc"
)

// EnvEngine selects the container engine: docker or podman.
const EnvEngine = "KRM_FN_RUNTIME"

// ErrNoEngine: neither docker nor podman can be found.
var ErrNoEngine = errors.New("no container engine (docker or podman) found")

// Engine returns the container engine binary: KRM_FN_RUNTIME when set (docker or podman), else
// docker, else podman, whichever is on PATH.
func Engine(lookupEnv func(string) (string, bool)) (string, error) {
	if lookupEnv != nil {
		if v, ok := lookupEnv(EnvEngine); ok && v != "" {
			if v != "docker" && v != "podman" {
				return "", fmt.Errorf("%s=%q: expected docker or podman", EnvEngine, v)
			}
			p, err := exec.LookPath(v)
			if err != nil {
				return "", fmt.Errorf("%s=%s: %w", EnvEngine, v, err)
			}
			return p, nil
		}
	}
	for _, name := range []string{"docker", "podman"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoEngine
}

// Defaults bound what one container may take: a function over the largest list krm-catalog sends
// (fn.MaxResourceListBytes) fits in the memory, and a function has no business starting hundreds of
// processes. TmpSize bounds /tmp, the one writable place on the read-only root (tmpfs counts
// against the memory limit).
const (
	DefaultMemory    = 2 << 30
	DefaultPidsLimit = 256
	TmpSize          = 64 << 20
)

// Config is what a container function may do.
type Config struct {
	// Engine is the docker or podman binary.
	Engine string
	// Image is the image reference, pinned by digest for catalog functions.
	Image string
	// Network gives the container the default network instead of none. The caller grants it only
	// when the definition requires it and the user allowed it.
	Network bool
	// Mounts are --mount values, granted under the same rule.
	Mounts []string
	// Env are KEY=VALUE pairs for the container.
	Env []string
	// Args are appended after the image.
	Args []string
	// Memory bounds the container's memory in bytes (swap included); 0 means DefaultMemory.
	Memory int64
	// PidsLimit bounds its processes and threads; 0 means DefaultPidsLimit.
	PidsLimit int
}

// runArgs are the engine arguments for one locked-down container; name lets the caller kill it.
func (c Config) runArgs(name string, extra ...string) []string {
	memory, pids := c.Memory, c.PidsLimit
	if memory <= 0 {
		memory = DefaultMemory
	}
	if pids <= 0 {
		pids = DefaultPidsLimit
	}
	args := []string{"run", "--rm", "--name", name,
		"--user", "nobody",
		"--security-opt=no-new-privileges",
		"--cap-drop=ALL",
		// function output is read from the attached stream; the engine need not keep a log of it
		"--log-driver=none",
		"--read-only",
		fmt.Sprintf("--tmpfs=/tmp:rw,noexec,nosuid,nodev,size=%d", TmpSize),
		fmt.Sprintf("--memory=%d", memory),
		// the same value as --memory: no swap on top of the limit
		fmt.Sprintf("--memory-swap=%d", memory),
		fmt.Sprintf("--pids-limit=%d", pids),
	}
	if !c.Network {
		args = append(args, "--network", "none")
	}
	for _, m := range c.Mounts {
		args = append(args, "--mount", m)
	}
	for _, e := range c.Env {
		args = append(args, "--env", e)
	}
	args = append(args, extra...)
	args = append(args, c.Image)
	return append(args, c.Args...)
}

// Function runs a container once per call (spec v1): docker run --rm -i ... IMAGE.
type Function struct {
	Config
	Stderr  io.Writer
	Timeout time.Duration
	Format  fn.Format
}

// Run implements fn.Function. On timeout or cancellation the container itself is removed: killing
// the docker client alone would leave it running.
func (f *Function) Run(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	cmd, o := f.command()
	return proc.Call(ctx, cmd, in, o)
}

// RunRaw implements fn.RawFunction, removing the container as Run does.
func (f *Function) RunRaw(ctx context.Context, in *fn.ResourceList, stdout io.Writer) (*fn.RawCall, error) {
	cmd, o := f.command()
	return proc.CallRaw(ctx, cmd, in, stdout, o)
}

// command is one container run of the function, and the call's options: its kill removes the
// container.
func (f *Function) command() (*exec.Cmd, proc.Options) {
	name := Name()
	return exec.Command(f.Engine, f.runArgs(name, "-i")...), proc.Options{Format: f.Format, Stderr: f.Stderr,
		Timeout: f.Timeout, Kill: func() { Remove(f.Engine, name) }}
}

// RunEncoded runs the container over input as it came and returns what it wrote, unread
// (fn/evaluator's pass-through); output past maxOutput bytes fails the call. exited is whether it
// exited 0, which is then its verdict.
func (f *Function) RunEncoded(ctx context.Context, input []byte, _ fn.Format, maxOutput int) (out []byte, stderr string, exited bool, err error) {
	name := Name()
	cmd := exec.Command(f.Engine, f.runArgs(name, "-i")...)
	out, stderr, err = proc.RunEncoded(ctx, cmd, input, proc.Options{Stderr: f.Stderr, Timeout: f.Timeout, MaxOutput: maxOutput,
		Kill: func() { Remove(f.Engine, name) }})
	return out, stderr, err == nil, err
}

// Name returns a fresh container name.
func Name() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "krm-fn-" + hex.EncodeToString(b[:])
}

// Remove force-removes a container, ignoring errors: it may be gone already.
func Remove(engine, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, engine, "rm", "-f", name)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	_ = cmd.Run()
}

// Output runs the engine with args and returns its trimmed standard output.
func Output(ctx context.Context, engine string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, engine, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("%s %s: %s", engine, args[0], msg)
	}
	return strings.TrimSpace(string(out)), nil
}

// MountAllowed reports whether a --mount value the user passed may be granted: type bind or volume
// with a source and target; tmpfs needs no source.
func MountAllowed(m string) error {
	fields := map[string]string{}
	for _, kv := range strings.Split(m, ",") {
		k, v, _ := strings.Cut(kv, "=")
		fields[k] = v
	}
	if fields["type"] == "" {
		return fmt.Errorf("mount %q: give type=bind, volume or tmpfs", m)
	}
	target := fields["target"] + fields["dst"] + fields["destination"]
	if target == "" {
		return fmt.Errorf("mount %q: give target=", m)
	}
	if fields["type"] != "tmpfs" && fields["source"]+fields["src"] == "" {
		return fmt.Errorf("mount %q: give source=", m)
	}
	return nil
}

package server

import (
	"fmt"
	"io"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/krm-catalog/krm-catalog/fn/runtime/internal/proc"
)

// Process is an Instance backed by a child process: an exec function, or the attached engine client
// of a container function (which exits when the container does).
type Process struct {
	cmd    *exec.Cmd
	done   chan struct{}
	tail   *proc.Tail
	url    string
	onStop func() // extra clean-up, such as removing the container
	once   sync.Once
}

// StartProcess starts cmd, passing its standard error through to stderr (nil: discard) while
// keeping the end of it. The caller sets the URL once it knows it.
func StartProcess(cmd *exec.Cmd, stderr io.Writer, onStop func()) (*Process, error) {
	p := &Process{cmd: cmd, done: make(chan struct{}), tail: &proc.Tail{Max: proc.StderrTail}, onStop: onStop}
	if stderr != nil {
		cmd.Stderr = io.MultiWriter(stderr, p.tail)
	} else {
		cmd.Stderr = p.tail
	}
	setParentDeath(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// SetURL records where the server answers.
func (p *Process) SetURL(u string) { p.url = u }

// URL implements Instance.
func (p *Process) URL() string { return p.url }

// Done implements Instance.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitCode is the process's exit status once it has exited (-1 for a signal), 0 before.
func (p *Process) ExitCode() int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	default:
		return 0
	}
}

// Stderr implements Instance.
func (p *Process) Stderr() string { return p.tail.String() }

// Stop asks the process to end (SIGTERM), kills it after two seconds, and waits for it.
func (p *Process) Stop() error {
	p.once.Do(func() {
		if p.onStop != nil {
			p.onStop()
		}
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return nil
}

// Kill ends the process at once, without clean-up, as a crash would.
func (p *Process) Kill() error {
	if p.cmd.Process == nil {
		return nil
	}
	return p.cmd.Process.Kill()
}

// FreeLoopbackAddr returns a 127.0.0.1 address with a port that was free a moment ago. The server
// binds it itself; should another process take the port first, the server exits and the pool
// launches it again (on another port).
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

package exec

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/krm-catalog/krm-catalog/fn/runtime/server"
)

// Launcher starts an executable as a spec v2 function server on a loopback port.
type Launcher struct {
	Path   string
	Env    []string
	Stderr io.Writer
}

// Launch implements server.Launcher: PATH --http-addr 127.0.0.1:PORT.
func (l *Launcher) Launch(ctx context.Context) (server.Instance, error) {
	addr, err := server.FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	home, err := NewHome()
	if err != nil {
		return nil, err
	}
	var p *server.Process
	for attempt := 1; ; attempt++ {
		// not CommandContext: the server outlives the call that started it; Pool.Close stops it
		cmd := exec.Command(l.Path, "--http-addr", addr)
		cmd.Env = home.Environ(l.Env)
		p, err = server.StartProcess(cmd, l.Stderr, nil)
		if textBusy(err) && attempt < 5 {
			time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
			continue
		}
		if err != nil {
			home.Remove()
			return nil, fmt.Errorf("start %s: %w", l.Path, err)
		}
		break
	}
	go func() {
		<-p.Done()
		home.Remove()
	}()
	p.SetURL("http://" + addr + "/")
	return p, nil
}

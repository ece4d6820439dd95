package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"time"

	"github.com/krm-catalog/krm-catalog/fn/runtime/server"
)

// ServerNetwork is the network function servers run on when they have no network grant: an internal
// network (docker network create --internal), which has no route out of the host. The engine does
// not publish ports of containers on internal networks, so krm-catalog reaches the server at its
// address on that network, which only this host can reach.
const ServerNetwork = "krm-catalog-fn-internal"

// serverPort is the port the function listens on inside its container.
const serverPort = "8080"

// Launcher starts a container function as a spec v2 server.
type Launcher struct {
	Config
	Stderr io.Writer
}

// Launch implements server.Launcher. Without a network grant the container joins the internal
// ServerNetwork and is reached at its own address; with one it joins the default network and its
// port is published on 127.0.0.1 only.
func (l *Launcher) Launch(ctx context.Context) (server.Instance, error) {
	name := Name()
	var extra []string
	if l.Network {
		extra = append(extra, "--publish", "127.0.0.1::"+serverPort)
	} else {
		if err := ensureInternalNetwork(ctx, l.Engine); err != nil {
			return nil, err
		}
		extra = append(extra, "--network", ServerNetwork)
	}
	cfg := l.Config
	cfg.Network = true // the network is chosen above: internal, or the default one granted
	cfg.Args = append(append([]string(nil), cfg.Args...), "--http-addr=0.0.0.0:"+serverPort)
	cmd := exec.Command(l.Engine, cfg.runArgs(name, extra...)...)
	p, err := server.StartProcess(cmd, l.Stderr, func() { Remove(l.Engine, name) })
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", l.Image, err)
	}
	addr, err := l.address(ctx, p, name)
	if err != nil {
		_ = p.Stop()
		return nil, err
	}
	p.SetURL("http://" + addr + "/")
	return p, nil
}

// address finds where the server answers, once the engine reports it.
func (l *Launcher) address(ctx context.Context, p *server.Process, name string) (string, error) {
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 250*time.Millisecond) {
		var addr string
		var err error
		if l.Network {
			addr, err = Output(ctx, l.Engine, "port", name, serverPort+"/tcp")
			addr = firstLine(addr)
		} else {
			var ip string
			ip, err = Output(ctx, l.Engine, "inspect", "-f", `{{with index .NetworkSettings.Networks "`+ServerNetwork+`"}}{{.IPAddress}}{{end}}`, name)
			if err == nil && net.ParseIP(ip) != nil {
				addr = net.JoinHostPort(ip, serverPort)
			}
		}
		if err == nil && addr != "" {
			return addr, nil
		}
		select {
		case <-p.Done():
			return "", fmt.Errorf("container %s exited: %s", l.Image, p.Stderr())
		case <-ctx.Done():
			return "", fmt.Errorf("container %s: no address in time: %w", l.Image, errors.Join(ctx.Err(), err))
		case <-time.After(delay):
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}

// ensureInternalNetwork creates ServerNetwork when it does not exist. Concurrent creation by another
// run is fine.
func ensureInternalNetwork(ctx context.Context, engine string) error {
	if _, err := Output(ctx, engine, "network", "inspect", ServerNetwork); err == nil {
		return nil
	}
	if _, err := Output(ctx, engine, "network", "create", "--internal", ServerNetwork); err != nil {
		if _, again := Output(ctx, engine, "network", "inspect", ServerNetwork); again == nil {
			return nil
		}
		return fmt.Errorf("create the internal network for function servers: %w", err)
	}
	return nil
}

package pgcluster

import (
	"os"
	"strconv"
	"strings"
)

// pidFile is the content of a running server's postmaster.pid.
type pidFile struct {
	pid       int
	port      int
	socketDir string
	listen    string // first of listen_addresses; "" if no TCP
	status    string // "starting", "stopping", "ready", "standby", or "" while being written
}

func readPidFile(path string) (pidFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return pidFile{}, err
	}
	// Lines: pid, data dir, start time, port, socket dir, listen address,
	// shared memory key, status.
	lines := strings.Split(string(b), "\n")
	line := func(n int) string {
		if n > len(lines) {
			return ""
		}
		return strings.TrimSpace(lines[n-1])
	}
	var pf pidFile
	pf.pid, _ = strconv.Atoi(line(1))
	pf.port, _ = strconv.Atoi(line(4))
	pf.socketDir = line(5)
	pf.listen = line(6)
	pf.status = line(8)
	return pf, nil
}

// ready reports whether the server accepts connections.
func (pf pidFile) ready() bool { return pf.status == "ready" || pf.status == "standby" }

// host returns the TCP host to connect to, or "" for the unix socket.
func (pf pidFile) host() string {
	switch pf.listen {
	case "":
		if pf.socketDir != "" {
			return ""
		}
		return "127.0.0.1"
	case "*", "0.0.0.0", "localhost":
		return "127.0.0.1"
	case "::":
		return "::1"
	}
	return pf.listen
}

package store

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// userTimeout is a dialer's Control that sets TCP_USER_TIMEOUT: what the connection sends and the
// peer does not acknowledge within d fails the connection. A healthy host's kernel acknowledges in
// milliseconds however slow the query, so this only ends connections to a host that is gone, as
// soon as a request is sent to it, instead of at the request's deadline.
func userTimeout(d time.Duration) func(network, address string, c syscall.RawConn) error {
	return func(network, _ string, c syscall.RawConn) error {
		if network != "tcp" && network != "tcp4" && network != "tcp6" {
			return nil
		}
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
		})
		if err != nil {
			return err
		}
		return serr
	}
}

//go:build !linux

package store

import (
	"syscall"
	"time"
)

// userTimeout sets nothing where TCP_USER_TIMEOUT does not exist: keepalive and the requests'
// deadlines still end connections to a host that is gone, later.
func userTimeout(time.Duration) func(network, address string, c syscall.RawConn) error { return nil }

package store

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestUserTimeout checks that the service's database connections give up on a peer that does not
// acknowledge what they send within the connect timeout (TCP_USER_TIMEOUT), and keep probing an
// idle one (keepalive).
func TestUserTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	h := newHostHealth(1500*time.Millisecond, nil)
	c, err := h.dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := tracked(c).Conn.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ut, ka int
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		ut, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
		if gerr == nil {
			ka, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE)
		}
	}); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	if ut != 1500 {
		t.Errorf("TCP_USER_TIMEOUT %d ms, want 1500 (the connect timeout)", ut)
	}
	if ka != 1 {
		t.Error("no keepalive")
	}
}

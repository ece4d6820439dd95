package registrytest

import (
	"net"
	"sync"
	"testing"
)

// Silent listens on 127.0.0.1, accepts connections and never answers, as a registry that has
// hung; it returns its host:port. Everything is closed when the test ends.
func Silent(t testing.TB) string {
	t.Helper()
	return SilentListener(t).Addr().String()
}

// SilentListener is Silent's listener, for a test that closes it early to turn the hung registry
// into one that refuses connections.
func SilentListener(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln
}

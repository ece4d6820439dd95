//go:build linux || darwin

package outbuf

import "golang.org/x/sys/unix"

// mapped reserves limit bytes of private anonymous memory; pages become resident as they are
// written.
func mapped(limit int) (data []byte, free func([]byte), ok bool) {
	if limit <= 0 {
		return nil, nil, false
	}
	data, err := unix.Mmap(-1, 0, limit, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, false
	}
	return data, func(b []byte) { _ = unix.Munmap(b) }, true
}

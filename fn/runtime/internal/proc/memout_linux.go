package proc

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// memOutput is a function's standard output as a memory file rather than a pipe. Through a pipe,
// every write the function makes wakes this process to read it, and kyaml's writer (every public
// kpt function) writes its list about 120 bytes at a time: some 9,000 wake-ups and reads for a list
// of 1,000 resources, a fifth of what a render costs besides its functions. Into a memory file the
// writes land without waking anyone, and the list is read once the function has exited.
//
// The file is sealed at its size, the limit rounded up to a page: past it the function's writes
// fail, and since every page below it can be written, a function that writes too much reaches that
// size, which is past the limit. What it wrote ends at the file offset it shares with this process.
type memOutput struct {
	f    *os.File
	size int64
}

func newMemOutput(limit int) (*memOutput, error) {
	fd, err := unix.MemfdCreate("function-stdout", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("create the function's output file: %w", err)
	}
	f := os.NewFile(uintptr(fd), "function-stdout")
	page := int64(os.Getpagesize())
	size := (int64(limit) + 1 + page - 1) / page * page
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, fmt.Errorf("size the function's output file: %w", err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal the function's output file: %w", err)
	}
	return &memOutput{f: f, size: size}, nil
}

// file is what the function's standard output is set to.
func (m *memOutput) file() *os.File { return m.f }

// read returns what the function wrote, or over when it wrote more than limit bytes. Each part
// read is given back to the system at once (a hole punched), so that the output is not held twice.
func (m *memOutput) read(limit int) (out []byte, over bool, err error) {
	n, err := m.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, false, fmt.Errorf("read the function's output: %w", err)
	}
	if n > int64(limit) {
		return nil, true, nil
	}
	out = make([]byte, n)
	const part = 4 << 20
	for off := int64(0); off < n; off += part {
		end := min(off+part, n)
		if _, err := m.f.ReadAt(out[off:end], off); err != nil {
			return nil, false, fmt.Errorf("read the function's output: %w", err)
		}
		_ = unix.Fallocate(int(m.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, end-off)
	}
	return out, false, nil
}

func (m *memOutput) Close() error { return m.f.Close() }

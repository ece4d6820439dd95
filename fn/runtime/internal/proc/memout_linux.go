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
type memOutput struct{ f *os.File }

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
	return &memOutput{f: f}, nil
}

// file is what the function's standard output is set to.
func (m *memOutput) file() *os.File { return m.f }

// read returns what the function wrote, or over when it wrote more than limit bytes.
func (m *memOutput) read(limit int) (out []byte, over bool, err error) {
	n, over, err := m.written(limit)
	if err != nil || over {
		return nil, over, err
	}
	out = make([]byte, n)
	return out, false, m.parts(n, func(off, end int64) []byte { return out[off:end] }, func([]byte) error { return nil })
}

// copyTo writes what the function wrote to w, or reports over when it wrote more than limit bytes.
func (m *memOutput) copyTo(w io.Writer, limit int) (over bool, err error) {
	n, over, err := m.written(limit)
	if err != nil || over {
		return over, err
	}
	buf := make([]byte, min(n, memPart))
	return false, m.parts(n, func(off, end int64) []byte { return buf[:end-off] }, func(p []byte) error {
		_, err := w.Write(p)
		return err
	})
}

// written is how much the function wrote: the offset its writes reached.
func (m *memOutput) written(limit int) (n int64, over bool, err error) {
	n, err = m.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, false, fmt.Errorf("read the function's output: %w", err)
	}
	return n, n > int64(limit), nil
}

// memPart is how much of the output is read at a time.
const memPart = 4 << 20

// parts reads the first n bytes part by part into into(off, end), hands each to use, and gives
// its pages back to the system at once (a hole punched), so that the output is not held twice.
func (m *memOutput) parts(n int64, into func(off, end int64) []byte, use func([]byte) error) error {
	for off := int64(0); off < n; off += memPart {
		end := min(off+memPart, n)
		p := into(off, end)
		if _, err := m.f.ReadAt(p, off); err != nil {
			return fmt.Errorf("read the function's output: %w", err)
		}
		_ = unix.Fallocate(int(m.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, end-off)
		if err := use(p); err != nil {
			return err
		}
	}
	return nil
}

func (m *memOutput) Close() error { return m.f.Close() }

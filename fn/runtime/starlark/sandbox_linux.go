package starlark

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// limitMemory bounds the process's data segment, which holds the Go heap (Linux counts every
// private writable mapping in RLIMIT_DATA since 4.7), to what it holds now plus n: the runtime's
// own start-up mappings (about 100 MiB of mostly untouched reservations, more with more threads)
// are not the script's.
func limitMemory(n int64) error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	base, err := vmData(status)
	if err != nil {
		return err
	}
	limit := uint64(base + n)
	return syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: limit, Max: limit})
}

// vmData reads the VmData line of /proc/self/status, in bytes.
func vmData(status []byte) (int64, error) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("VmData:"))
		if !ok {
			continue
		}
		kb, ok := bytes.CutSuffix(bytes.TrimSpace(rest), []byte(" kB"))
		if !ok {
			break
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(kb)), 10, 64)
		if err != nil || n < 0 || n > 1<<42 {
			break
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("no VmData in /proc/self/status")
}

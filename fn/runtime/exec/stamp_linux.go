//go:build linux

package exec

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileStamp identifies a file's content cheaply: size, modification and change times, inode. A
// rewrite in place changes the change time, which no user call can set back.
func fileStamp(st fs.FileInfo) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d %d %d %d.%d", st.Size(), st.ModTime().UnixNano(), sys.Ino, sys.Ctim.Sec, sys.Ctim.Nsec)
	}
	return ""
}

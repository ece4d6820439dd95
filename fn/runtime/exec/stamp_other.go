//go:build !linux

package exec

import "io/fs"

// fileStamp is empty outside Linux (the change time is spelled differently on each system): the executable is hashed every run.
func fileStamp(fs.FileInfo) string { return "" }

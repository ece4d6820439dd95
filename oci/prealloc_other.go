//go:build !linux

package oci

import "os"

// preallocate is a Linux optimisation (prealloc_linux.go).
func preallocate(*os.File, int64) {}

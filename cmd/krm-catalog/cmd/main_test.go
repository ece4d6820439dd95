package cmd

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if sandboxed, code := ServeSandbox(); sandboxed {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

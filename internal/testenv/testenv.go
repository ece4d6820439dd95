// Package testenv holds the one policy for tests whose real part (PostgreSQL, Docker, Chromium, a
// CLI to interoperate with) is missing: outside CI they skip, saying how to get the part; in CI
// (CI=true) they fail, so that a green CI never hides a test that did not run.
package testenv

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
)

// Missing ends the test because what it needs is missing: a skip, or with CI=true a failure.
func Missing(t testing.TB, what, howTo string) {
	t.Helper()
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatalf("%s is missing, and CI=true requires it: %s", what, howTo)
	}
	msg := fmt.Sprintf("%s is missing: %s (with CI=true this is a failure)", what, howTo)
	// go test shows nothing of a package that passes but its "ok" line, skips included, unless -v:
	// say it on the terminal the tests were started from, when there is one
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		writeSkip(tty, t.Name(), msg)
		tty.Close()
	}
	t.Skip(msg)
}

// writeSkip writes the line a skip shows on the terminal.
func writeSkip(w io.Writer, test, msg string) {
	fmt.Fprintf(w, "--- SKIP: %s: %s\n", test, msg)
}

// Package testenv holds the one policy for tests whose real part (PostgreSQL, Docker, Chromium, a
// CLI to interoperate with) is missing: outside CI they skip, saying how to get the part; in CI
// (CI=true) they fail, so that a green CI never hides a test that did not run.
package testenv

import (
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
	t.Skipf("%s is missing: %s (with CI=true this is a failure)", what, howTo)
}

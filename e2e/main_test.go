// Package e2e holds end-to-end tests: the real service on real PostgreSQL (and, in other files,
// real registries, Docker and Chromium), each started by the tests themselves.
package e2e

import (
	"os"
	"testing"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
	"github.com/krm-catalog/krm-catalog/migrations"
	"github.com/krm-catalog/krm-catalog/store/storetest"
)

func TestMain(m *testing.M) {
	if sandboxed, code := cmd.ServeSandbox(); sandboxed {
		os.Exit(code)
	}
	os.Exit(storetest.Main(m, migrations.Up))
}

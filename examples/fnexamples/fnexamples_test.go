package fnexamples

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed example catalog pins the sha256 of what the example functions build to. When a
// change to the functions (or to what they import) changes the executables, this test says how to
// regenerate the catalog; the README's commands depend on it.
func TestExampleCatalogPinsWhatIsBuilt(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(root, "examples", "functions", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := Current()
	if p.String() != "linux/amd64" && p.String() != "linux/arm64" {
		t.Skipf("the example catalog lists linux/amd64 and linux/arm64, not %s", p)
	}
	paths, err := Build(context.Background(), root, t.TempDir(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Functions() {
		sum, err := FileSHA256(paths[f.Name])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(committed), "sha256: "+sum) {
			t.Errorf("examples/functions/catalog.yaml does not pin %s for %s as built (%s); regenerate it: go run ./examples/functions/serve -write-catalog examples/functions/catalog.yaml", f.Name, p, sum)
		}
	}
	script, err := FileSHA256(filepath.Join(root, "examples", "functions", StarlarkScript))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(committed), "sha256: "+script) {
		t.Errorf("examples/functions/catalog.yaml does not pin %s as it is; regenerate it", StarlarkScript)
	}
}

package functions

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/examples/fnexamples"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// verify says no when it could not check: the example functions' executables and script, served
// over https as the example catalog names them, cannot carry a signature, so --require-signatures
// fails on each, naming it; without it verify downloads each and checks its sha256 (a file that
// changed on the server fails); --offline checks none and says so.
func TestVerifyHTTPSArtifacts(t *testing.T) {
	t.Parallel()
	pub := writeFile(t, t.TempDir(), "cosign.pub", string(signtest.KeyPair(t, "k").PublicPEM))
	p := publish(t, nil)
	https := len(fnexamples.Functions()) + 1 // an executable each for this platform, and the script
	r := run{env: p.env}

	out := r.krm(t, "verify", "--key", pub, "--require-signatures", p.catalog)
	if out.code != 1 {
		t.Fatalf("verify --require-signatures: %v, want exit 1", out)
	}
	for _, f := range fnexamples.Functions() {
		uri := fmt.Sprintf("%s/%s/%s/%s is fetched over https, which cannot carry a signature: publish it as an OCI artifact (krm-catalog push --type exec) and name it by oci://", p.srv.URL, f.Name, goosArch(), f.Name)
		if !strings.Contains(out.stdout, uri) {
			t.Errorf("verify --require-signatures does not name %s:\n%v", f.Name, out)
		}
	}
	if !strings.Contains(out.stdout, p.srv.URL+"/"+fnexamples.StarlarkScript+" is fetched over https") || strings.Count(out.stdout, ": error: ") != https {
		t.Errorf("verify --require-signatures: want %d errors, the script's among them:\n%v", https, out)
	}
	if p.hits.Total() != 0 {
		t.Errorf("verify --require-signatures downloaded %d files; they fail whatever they hold", p.hits.Total())
	}

	out = r.krm(t, "verify", p.catalog)
	if want := fmt.Sprintf("0 errors, 0 warnings in 1 file; %d artifacts checked, 0 failed\n", https); out.code != 0 || out.stderr != want {
		t.Errorf("verify: %v\nwant exit 0 and %q", out, want)
	}
	if p.hits.Total() != https {
		t.Errorf("verify downloaded %d files, want %d", p.hits.Total(), https)
	}

	out = r.krm(t, "verify", "--offline", p.catalog)
	if want := fmt.Sprintf("0 errors, 0 warnings in 1 file; 0 artifacts checked, 0 failed; %[1]d not checked (%[1]d offline)\nkrm-catalog: warning: --offline: no artifact was checked (%[1]d skipped)\n", https); out.code != 0 || out.stderr != want {
		t.Errorf("verify --offline: %v\nwant exit 0 and %q", out, want)
	}

	// the server now serves another file for set-labels than the one the catalog pins
	tampered := publish(t, map[string]string{fmt.Sprintf("/set-labels/%s/set-labels", goosArch()): filepath.Join(bins.Root, "go.mod")})
	out = run{env: tampered.env}.krm(t, "verify", tampered.catalog)
	if out.code != 1 || !strings.Contains(out.stdout, "error: the document records sha256 ") || !strings.Contains(out.stdout, "/set-labels/"+goosArch()+"/set-labels holds ") {
		t.Errorf("verify of a changed file: %v, want exit 1 naming it", out)
	}
}

package e2e

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
	"github.com/krm-catalog/krm-catalog/store/storetest"
)

func requireDocker(t *testing.T) {
	t.Helper()
	if err := exec.Command("docker", "info").Run(); err == nil {
		return
	}
	testenv.Missing(t, "Docker", "the image test needs a running Docker engine")
}

// TestImageServes builds the FROM-scratch image with scripts/build-image.sh (no base image is
// pulled) and runs the service from it against a real PostgreSQL.
func TestImageServes(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	tag := "krm-catalog:e2e"
	if out, err := exec.Command("../scripts/build-image.sh", tag).CombinedOutput(); err != nil {
		t.Fatalf("build the image: %v\n%s", err, out)
	}
	// the image is rebuilt on every run; leave no copies behind
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })
	db := storetest.NewDatabase(t)
	if !strings.Contains(db, "@127.0.0.1:") {
		t.Fatalf("the test database %s is not on 127.0.0.1", db)
	}
	// host networking: the container reaches the test's PostgreSQL and listens on 127.0.0.1 only,
	// on a port it binds itself and logs (no port chosen here that another process could take)
	out, err := exec.Command("docker", "run", "-d", "--rm", "--network", "host", tag,
		"serve", "--addr", "127.0.0.1:0", "--database-url", db).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })

	url := ""
	waitFor(t, 30*time.Second, "the container to serve", func() bool {
		if url == "" {
			logs, _ := exec.Command("docker", "logs", id).CombinedOutput()
			if m := servingURL.FindSubmatch(logs); m != nil {
				url = string(m[1])
			}
		}
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if user, _ := exec.Command("docker", "inspect", "-f", "{{.Config.User}}", id).Output(); strings.TrimSpace(string(user)) != "65532:65532" {
		t.Errorf("the container runs as %q, want the unprivileged 65532:65532", user)
	}
}

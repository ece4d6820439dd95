package cmd

import (
	"strings"
	"testing"
)

// TestPublishRefusesCleartextToken: publish does not send a token over plain HTTP to another
// machine without --allow-http-token (the address is in the documentation range: no request
// would succeed, and none is made).
func TestPublishRefusesCleartextToken(t *testing.T) {
	t.Parallel()
	code, _, errOut := run(t, "", "publish", "--server", "http://192.0.2.1:8080", "--token", "krmc_x", "--version", "1.0.0", "../../../catalog/testdata/reference/catalog.yaml")
	if code != ExitUsage || !strings.Contains(errOut, "clear text") || !strings.Contains(errOut, "--allow-http-token") {
		t.Errorf("exit %d, stderr %q; want %d refusing to send the token in clear text, naming --allow-http-token", code, errOut, ExitUsage)
	}
}

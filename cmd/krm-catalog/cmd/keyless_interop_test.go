package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// TestKeylessInterop: cosign v3 and krm-catalog agree on the same bundles, both ways, offline.
// cosign verifies the keyless signature and SLSA provenance a virtual Sigstore made (attached by
// krm-catalog, checked against the trusted_root.json krm-catalog is given), and refuses another
// identity as krm-catalog does; krm-catalog verifies the provenance cosign attests with a key.
func TestKeylessInterop(t *testing.T) {
	cosign3 := tool(t, "cosign-v3")
	const other = "https://github.com/other/fns/.github/workflows/release.yml@refs/heads/main"
	dir := ociEnv(t)
	ctx := context.Background()
	ss := signtest.NewSigstore(t)
	rootFile := writeTestFile(t, dir, "trusted_root.json", string(ss.RootJSON(t)), 0o644)
	bin := writeTestFile(t, dir, "bin", "binary", 0o755)
	mustCLI(t, dir, cosign3, "generate-key-pair")
	key, pub := filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
	predicate, err := json.Marshal(signtest.GitHubProvenance(repo, "refs/tags/v1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	predicateFile := writeTestFile(t, dir, "provenance.json", string(predicate), 0o644)
	client := oci.NewClient(oci.Options{})

	for _, reg := range registrytest.Both(t) {
		t.Run(reg.Name, func(t *testing.T) {
			work := filepath.Join(dir, reg.Name)
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			ref := reg.Host + "/interop/keyless:v1"
			d := pushExec(t, client, ref, bin)
			pinned := reg.Host + "/interop/keyless@" + d.String()
			for _, b := range [][]byte{
				ss.Sign(t, identity, issuer, d, signtest.BundleOptions{}),
				ss.Attest(t, identity, issuer, signtest.Statement(t, d, sign.SLSAProvenanceV1, signtest.GitHubProvenance(repo, "refs/tags/v1.0.0")), signtest.BundleOptions{}),
			} {
				if _, err := client.AttachBundle(ctx, ref, b); err != nil {
					t.Fatal(err)
				}
			}
			catalogFile := writeTestFile(t, dir, reg.Name+"-catalog.yaml", execCatalog(ref, binarySHA256), 0o644)
			// the virtual Fulcio embeds no SCTs
			offline := []string{"--trusted-root", rootFile, "--certificate-oidc-issuer", issuer, "--insecure-ignore-sct", "--allow-http-registry"}

			t.Run("cosign verifies the keyless signature and provenance", func(t *testing.T) {
				mustCLI(t, work, cosign3, append(append([]string{"verify"}, offline...), "--certificate-identity", identity, pinned)...)
				mustCLI(t, work, cosign3, append(append([]string{"verify-attestation", "--type", "slsaprovenance1"}, offline...), "--certificate-identity", identity, pinned)...)
				mustRun(t, ExitOK, "", "verify", "--trusted-root", rootFile, "--certificate-identity", identity, "--certificate-oidc-issuer", issuer,
					"--require-signatures", "--require-provenance", "--provenance-source-repo", repo, catalogFile)
			})
			t.Run("both refuse another identity", func(t *testing.T) {
				if out, ok := cli(t, work, cosign3, append(append([]string{"verify"}, offline...), "--certificate-identity", other, pinned)...); ok {
					t.Errorf("cosign verified another identity:\n%s", out)
				}
				if out, ok := cli(t, work, cosign3, append(append([]string{"verify-attestation", "--type", "slsaprovenance1"}, offline...), "--certificate-identity", other, pinned)...); ok {
					t.Errorf("cosign verified the attestation for another identity:\n%s", out)
				}
				code, stdout, _ := run(t, "", "verify", "--trusted-root", rootFile, "--certificate-identity", other, "--certificate-oidc-issuer", issuer,
					"--require-signatures", catalogFile)
				if code != ExitFailure || !strings.Contains(stdout, identity) {
					t.Errorf("verify with another identity: exit %d\n%s", code, stdout)
				}
			})
			t.Run("krm-catalog verifies the provenance cosign attests", func(t *testing.T) {
				keyRef := reg.Host + "/interop/attested-by-cosign:v1"
				keyPinned := reg.Host + "/interop/attested-by-cosign@" + pushExec(t, client, keyRef, bin).String()
				mustCLI(t, work, cosign3, "attest", "--key", key, "--type", "slsaprovenance1", "--predicate", predicateFile,
					"--use-signing-config=false", "--tlog-upload=false", "--allow-http-registry", "--yes", keyPinned)
				mustCLI(t, work, cosign3, "verify-attestation", "--key", pub, "--type", "slsaprovenance1", "--insecure-ignore-tlog", "--allow-http-registry", keyPinned)
				cat := writeTestFile(t, dir, reg.Name+"-cosign.yaml", execCatalog(keyRef, binarySHA256), 0o644)
				mustRun(t, ExitOK, "", "verify", "--key", pub, "--require-provenance", "--provenance-source-repo", repo, cat)
				code, stdout, _ := run(t, "", "verify", "--key", pub, "--require-provenance", "--provenance-source-repo", "https://github.com/other/fns", cat)
				if code != ExitFailure || !strings.Contains(stdout, `source repository is "`+repo+`"`) {
					t.Errorf("verify with another source repository: exit %d\n%s", code, stdout)
				}
			})
		})
	}
}

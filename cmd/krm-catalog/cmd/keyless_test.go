package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// TestVerifyKeyless is the acceptance of keyless trust: artifacts a virtual Sigstore signed and
// attested for a GitHub workflow identity, stored as referrers the way cosign v3 stores them, pass
// verify with that identity, the trusted root written to a file, and the provenance's source
// repository; another identity, another issuer, another repository, or no provenance fail with
// exit 1 and the mismatch named.
// The keyless signer of the tests: a GitHub release workflow of repo.
const (
	identity = "https://github.com/example/fns/.github/workflows/release.yml@refs/tags/v1.0.0"
	issuer   = "https://token.actions.githubusercontent.com"
	repo     = "https://github.com/example/fns"
	// binarySHA256 is the sha256 of the file "binary"
	binarySHA256 = "9a3a45d01531a20e89ac6ae10b0b0beb0492acd7216a368aa062d1a5fecaf9cd"
)

// pushExec pushes bin as the linux/amd64 exec artifact ref and returns the artifact's digest.
func pushExec(t *testing.T, client *oci.Client, ref, bin string) digest.Digest {
	t.Helper()
	mustRun(t, ExitOK, "", "push", "--type", "exec", "--platform", "linux/amd64="+bin, ref)
	art, err := client.Resolve(context.Background(), ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	return art.Root.Digest
}

func TestVerifyKeyless(t *testing.T) {
	dir := ociEnv(t)
	ctx := context.Background()
	ss := signtest.NewSigstore(t)
	rootFile := writeTestFile(t, dir, "trusted_root.json", string(ss.RootJSON(t)), 0o644)
	bin := writeTestFile(t, dir, "bin", "binary", 0o755)
	client := oci.NewClient(oci.Options{})

	for _, reg := range registrytest.Both(t) {
		t.Run(reg.Name, func(t *testing.T) {
			catalogFor := func(name, ref string) string {
				return writeTestFile(t, dir, reg.Name+"-"+name+".yaml", execCatalog(ref, binarySHA256), 0o644)
			}
			// attested: signed and with provenance from repo; signedOnly: signed, no provenance
			attested, signedOnly := reg.Host+"/fns/attested:v1", reg.Host+"/fns/signed:v1"
			for _, ref := range []string{attested, signedOnly} {
				d := pushExec(t, client, ref, bin)
				if _, err := client.AttachBundle(ctx, ref, ss.Sign(t, identity, issuer, d, signtest.BundleOptions{})); err != nil {
					t.Fatal(err)
				}
				if ref == attested {
					statement := signtest.Statement(t, d, sign.SLSAProvenanceV1, signtest.GitHubProvenance(repo, "refs/tags/v1.0.0"))
					if _, err := client.AttachBundle(ctx, ref, ss.Attest(t, identity, issuer, statement, signtest.BundleOptions{})); err != nil {
						t.Fatal(err)
					}
				}
			}
			good, noProvenance := catalogFor("attested", attested), catalogFor("signed", signedOnly)
			// an entry stating another source repository than its provenance names
			elsewhere := writeTestFile(t, dir, reg.Name+"-elsewhere.yaml", strings.Replace(execCatalog(attested, binarySHA256),
				"          runtime:\n", "          provenance:\n            sourceRepository: https://github.com/other/fns\n          runtime:\n", 1), 0o644)
			// the catalog itself, pushed and signed keylessly: resolve trusts it by identity
			catalogRef := reg.Host + "/catalogs/keyless:v1"
			mustRun(t, ExitOK, "", "push", catalogRef, good)
			catArt, err := client.Resolve(ctx, catalogRef, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.AttachBundle(ctx, catalogRef, ss.Sign(t, identity, issuer, catArt.Root.Digest, signtest.BundleOptions{})); err != nil {
				t.Fatal(err)
			}
			resolve := []string{"resolve", "--catalog", "oci://" + catalogRef, "--trusted-catalog", "oci://" + catalogRef, "--trusted-root", rootFile, "--certificate-oidc-issuer", issuer}
			keyless := []string{"verify", "--trusted-root", rootFile, "--require-signatures", "--certificate-oidc-issuer", issuer}

			tests := []struct {
				name string
				args []string
				code int
				want []string // what the output must name
			}{
				{"right identity", append(keyless, "--certificate-identity-regexp", `^https://github\.com/example/fns/`, good), ExitOK, nil},
				{"right identity, exact", append(keyless, "--certificate-identity", identity, noProvenance), ExitOK, nil},
				{"another identity", append(keyless, "--certificate-identity-regexp", `^https://github\.com/other/`, good), ExitFailure,
					[]string{identity, `matching /^https://github\.com/other//`}},
				{"another issuer", []string{"verify", "--trusted-root", rootFile, "--require-signatures", "--certificate-identity", identity,
					"--certificate-oidc-issuer", "https://accounts.example.com", good}, ExitFailure, []string{`issuer "` + issuer + `"`, "https://accounts.example.com"}},
				{"provenance from the repository", append(keyless, "--certificate-identity", identity, "--require-provenance", "--provenance-source-repo", repo, good), ExitOK, nil},
				{"provenance from another repository", append(keyless, "--certificate-identity", identity, "--require-provenance", "--provenance-source-repo", "https://github.com/other/fns", good), ExitFailure,
					[]string{`source repository is "` + repo + `", want "https://github.com/other/fns"`}},
				{"the entry's source repository, required", append(keyless, "--certificate-identity", identity, "--require-provenance", elsewhere), ExitFailure,
					[]string{`source repository is "` + repo + `", want "https://github.com/other/fns"`}},
				{"the entry's source repository, a warning", append(keyless, "--certificate-identity", identity, elsewhere), ExitOK,
					[]string{"warning: " + reg.Host + "/fns/attested@", `want "https://github.com/other/fns"`}},
				{"pull with the identity", []string{"pull", "-o", t.TempDir(), "--trusted-root", rootFile, "--certificate-identity", identity, "--certificate-oidc-issuer", issuer, attested}, ExitOK, nil},
				{"pull with another identity", []string{"pull", "-o", t.TempDir(), "--trusted-root", rootFile, "--certificate-identity", "https://github.com/other/fns/x@refs/heads/main", "--certificate-oidc-issuer", issuer, attested}, ExitFailure,
					[]string{identity}},
				{"resolve a catalog signed by the identity", append(resolve, "--certificate-identity", identity, "fn.example.com/v1", "Echo"), ExitOK, []string{attested}},
				{"resolve a catalog signed by another identity", append(resolve, "--certificate-identity-regexp", "^https://github.com/other/", "fn.example.com/v1", "Echo"), ExitUsage, // as with --key: a catalog that cannot be fetched
					[]string{identity}},
				{"an identity without an issuer", []string{"verify", "--trusted-root", rootFile, "--certificate-identity", identity, good}, ExitUsage,
					[]string{"--certificate-oidc-issuer"}},
				{"no provenance", append(keyless, "--certificate-identity", identity, "--require-provenance", "--provenance-source-repo", repo, noProvenance), ExitFailure,
					[]string{"no SLSA provenance attestation"}},
			}
			for _, tt := range tests {
				code, stdout, stderr := run(t, "", tt.args...)
				if code != tt.code {
					t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", tt.name, code, tt.code, stdout, stderr)
					continue
				}
				for _, w := range tt.want {
					if !strings.Contains(stdout+stderr, w) {
						t.Errorf("%s: the output does not name %q:\n%s%s", tt.name, w, stdout, stderr)
					}
				}
			}
		})
	}
}

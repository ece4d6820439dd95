package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/identity/identitytest"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

func TestAttachSBOMAndDiscover(t *testing.T) {
	dir := ociEnv(t)
	trusted := signtest.KeyPair(t, "trusted")
	key := writeTestFile(t, dir, "cosign.key", string(trusted.PrivatePEM), 0o600)
	pub := writeTestFile(t, dir, "cosign.pub", string(trusted.PublicPEM), 0o644)
	notSBOM := writeTestFile(t, dir, "notes.json", `{"name": "set-labels"}`, 0o644)
	reg := registrytest.Distribution(t)
	image := reg.Host + "/fns/set-labels"
	d := registrytest.PushImage(t, image+":v1.1.0", "")
	pinned := image + "@" + d.String()

	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		says     string
		artifact string // the SBOM's artifactType, on success
	}{
		{"SPDX, signed", []string{"--sbom", "testdata/sbom/set-labels.spdx.json", "--key", key}, ExitOK, "", oci.MediaTypeSPDX},
		{"CycloneDX", []string{"--sbom", "testdata/sbom/set-labels.cdx.json"}, ExitOK, "", oci.MediaTypeCycloneDX},
		{"not an SBOM", []string{"--sbom", notSBOM}, ExitUsage, "not an SPDX or CycloneDX JSON document", ""},
		{"both", []string{"--sbom", "testdata/sbom/set-labels.cdx.json", "--definition", "../../../examples/definition.yaml"}, ExitUsage, "one of --definition and --sbom", ""},
		{"neither", nil, ExitUsage, "one of --definition and --sbom", ""},
		{"by tag", []string{"--sbom", "testdata/sbom/set-labels.cdx.json"}, ExitUsage, "needs the image by digest", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := pinned
			if tc.name == "by tag" {
				ref = image + ":v1.1.0"
			}
			code, stdout, stderr := run(t, "", append(append([]string{"attach", "--format", "json"}, tc.args...), ref)...)
			if code != tc.code || !strings.Contains(stderr, tc.says) {
				t.Fatalf("exit %d, %s; want %d and %q", code, stderr, tc.code, tc.says)
			}
			if code != ExitOK {
				return
			}
			var out sbomJSON
			if err := json.Unmarshal([]byte(stdout), &out); err != nil || out.ArtifactType != tc.artifact {
				t.Errorf("attach printed %s (%v), want artifactType %s", stdout, err, tc.artifact)
			}
		})
	}

	// an SLSA provenance attestation, as cosign attest stores it: a bundle referrer named by its
	// predicate type
	identitytest.AttachBundle(t, pinned, []byte(`{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}`), "https://slsa.dev/provenance/v1")
	client := oci.NewClient(oci.Options{})
	text := mustRun(t, ExitOK, "", "discover", "--key", pub, pinned)
	for _, want := range []string{"sbom        sha256:", oci.MediaTypeSPDX, oci.MediaTypeCycloneDX, "attestation sha256:", "https://slsa.dev/provenance/v1"} {
		if !strings.Contains(text, want) {
			t.Errorf("discover output lacks %q:\n%s", want, text)
		}
	}
	var found discoverJSON
	if err := json.Unmarshal([]byte(mustRun(t, ExitOK, "", "discover", "--format", "json", pinned)), &found); err != nil {
		t.Fatal(err)
	}
	if len(found.SBOMs) != 2 || len(found.Attestations) != 1 || len(found.Signatures) != 0 {
		t.Errorf("discover --format json: %d SBOMs, %d attestations, %d signatures; want 2, 1, 0", len(found.SBOMs), len(found.Attestations), len(found.Signatures))
	}
	// the signed SBOM's signature verifies with the key
	for _, s := range found.SBOMs {
		if s.ArtifactType != oci.MediaTypeSPDX {
			continue
		}
		if _, err := client.VerifySignatures(context.Background(), image+"@"+s.Digest, []sign.PublicKey{trusted.Public}); err != nil {
			t.Errorf("the SPDX referrer's signature: %v", err)
		}
	}
}

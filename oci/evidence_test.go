package oci_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/identity/identitytest"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// TestEvidence reads what is attached to an image, on registries with and without the referrers
// API: a signature counts as one, an attestation does not, and SBOMs are listed and readable.
func TestEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	signer, pub := keyPair(t, "k")
	spdx := []byte(`{"spdxVersion": "SPDX-2.3", "name": "x"}`)
	for _, reg := range registrytest.Both(t) {
		t.Run(reg.Name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t)
			image := reg.Host + "/fns/x"
			pinned := image + "@" + registrytest.PushImage(t, image+":v1", reg.Name).String()

			ev, err := c.Evidence(ctx, pinned, []sign.PublicKey{pub})
			if err != nil {
				t.Fatal(err)
			}
			if got := oci.Classify(ev.Signatures); got != oci.StatusUnsigned || len(ev.Bundles)+len(ev.SBOMs) != 0 {
				t.Fatalf("nothing attached: %s, %d bundles, %d SBOMs", got, len(ev.Bundles), len(ev.SBOMs))
			}

			att := identitytest.AttachBundle(t, pinned, []byte(`{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}`), "https://slsa.dev/provenance/v1")
			sbom, err := c.AttachSBOM(ctx, pinned, spdx, oci.AttachOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ev, err = c.Evidence(ctx, pinned, []sign.PublicKey{pub})
			if err != nil {
				t.Fatal(err)
			}
			if got := oci.Classify(ev.Signatures); got != oci.StatusUnsigned {
				t.Errorf("an attestation only: %s, want unsigned", got)
			}
			if len(ev.Bundles) != 1 || ev.Bundles[0].Manifest != att {
				t.Errorf("bundles = %+v, want the attestation %s", ev.Bundles, att)
			}
			if len(ev.SBOMs) != 1 || ev.SBOMs[0].Manifest != sbom.Descriptor.Digest || ev.SBOMs[0].ArtifactType != oci.MediaTypeSPDX {
				t.Errorf("SBOMs = %+v, want %s", ev.SBOMs, sbom.Descriptor.Digest)
			}
			data, mediaType, err := c.ReadSBOM(ctx, pinned, sbom.Descriptor.Digest)
			if err != nil || mediaType != oci.MediaTypeSPDX {
				t.Fatalf("ReadSBOM: %s, %v", mediaType, err)
			}
			if diff := cmp.Diff(spdx, data); diff != "" {
				t.Errorf("the SBOM read back (-want +got):\n%s", diff)
			}
			if _, _, err := c.ReadSBOM(ctx, pinned, att); err == nil {
				t.Errorf("ReadSBOM of the attestation's manifest succeeded")
			}

			if _, err := c.Sign(ctx, pinned, signer, oci.SignOptions{Format: oci.FormatBundle}); err != nil {
				t.Fatal(err)
			}
			ev, err = c.Evidence(ctx, pinned, []sign.PublicKey{pub})
			if err != nil {
				t.Fatal(err)
			}
			if got := oci.Classify(ev.Signatures); got != oci.StatusVerified || len(ev.Bundles) != 2 {
				t.Errorf("signed with the key: %s with %d bundles, want verified with 2", got, len(ev.Bundles))
			}
		})
	}
}

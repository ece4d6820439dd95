package sign_test

import (
	"testing"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// FuzzParsePayload: payloads come from registries.
func FuzzParsePayload(f *testing.F) {
	good, _ := sign.NewPayload("registry.example.com/x", digestA)
	f.Add(good)
	f.Add([]byte(`{"critical":{"identity":{"docker-reference":"r/x"},"image":{"docker-manifest-digest":"sha256:abc"},"type":"cosign container image signature"},"optional":{"a":1}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"critical":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := sign.ParsePayload(b)
		if err != nil {
			return
		}
		if p.Digest.Validate() != nil {
			t.Fatalf("accepted payload with invalid digest %q", p.Digest)
		}
	})
}

// FuzzParseBundle: bundles come from registries.
func FuzzParseBundle(f *testing.F) {
	for _, s := range bundleSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"x"}},"dsseEnvelope":{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"AAAA"}]}}`))
	_, k, _ := keyPair(f, "k")
	f.Fuzz(func(t *testing.T, b []byte) {
		bundle, err := sign.ParseBundle(b)
		if err != nil {
			return
		}
		// Verification of whatever parsed must not panic, and a fresh key verifies nothing.
		if _, err := sign.VerifyBundle(bundle, []sign.PublicKey{k}, digestA); err == nil {
			t.Fatal("a random bundle verified with a fresh key")
		}
	})
}

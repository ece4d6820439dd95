package sign_test

import (
	"encoding/json"
	"testing"

	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
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

// FuzzLegacyBundle: the annotations of a keyless legacy signature come from registries; whatever
// parses must not verify for an identity under a fresh virtual Sigstore's root.
func FuzzLegacyBundle(f *testing.F) {
	ss := signtest.NewSigstore(f)
	payload, _ := sign.NewPayload("registry.example.com/x", digestA)
	good := ss.SignLegacy(f, workflow, actions, payload)
	f.Add(payload, good[sign.SignatureAnnotation], good[sign.CertificateAnnotation], good[sign.RekorBundleAnnotation], good[sign.TimestampAnnotation])
	f.Add([]byte(`{}`), "AAAA", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", `{"Payload":{"body":"e30="}}`, `{}`)
	trust := sign.Trust{Identities: []sign.Identity{{Subject: "nobody@example.com", Issuer: actions}}, Root: signtest.NewSigstore(f).Root(f)}
	f.Fuzz(func(t *testing.T, payload []byte, sig, cert, rekor, ts string) {
		ann := map[string]string{sign.SignatureAnnotation: sig, sign.CertificateAnnotation: cert, sign.RekorBundleAnnotation: rekor, sign.TimestampAnnotation: ts}
		if _, err := sign.LegacyBundle(payload, ann); err != nil {
			return
		}
		if _, err := sign.VerifyLegacy(trust, payload, ann, digestA); err == nil {
			t.Fatal("a fuzzed legacy signature verified under a fresh root")
		}
	})
}

// FuzzParseProvenance: predicates come from registries (verified, but written by any builder).
func FuzzParseProvenance(f *testing.F) {
	v1, _ := json.Marshal(signtest.GitHubProvenance("https://github.com/example/fns", "refs/tags/v1"))
	f.Add(sign.SLSAProvenanceV1, v1)
	f.Add(sign.SLSAProvenanceV02, []byte(`{"builder":{"id":"b"},"invocation":{"configSource":{"uri":"git+https://github.com/o/r@refs/heads/main"}}}`))
	f.Add(sign.SLSAProvenanceV1, []byte(`{"buildDefinition":{"resolvedDependencies":[{"uri":"@"}]}}`))
	f.Fuzz(func(t *testing.T, predicateType string, predicate []byte) {
		p, err := sign.ParseProvenance(predicateType, predicate)
		if err != nil {
			return
		}
		// a policy of exactly what was parsed accepts it
		if err := (sign.ProvenancePolicy{Builder: p.Builder, SourceRef: p.SourceRef}).Check(p); err != nil {
			t.Fatalf("%+v refused by its own policy: %v", p, err)
		}
	})
}

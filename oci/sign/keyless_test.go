package sign_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

const (
	workflow    = "https://github.com/example/fns/.github/workflows/release.yml@refs/tags/v1.0.0"
	otherFlow   = "https://github.com/mallory/fns/.github/workflows/release.yml@refs/heads/main"
	actions     = "https://token.actions.githubusercontent.com"
	otherIssuer = "https://accounts.example.com"
)

func TestVerifyBundleKeyless(t *testing.T) {
	t.Parallel()
	ss := signtest.NewSigstore(t)
	trust := sign.Trust{
		Identities: []sign.Identity{{SubjectRegexp: `^https://github\.com/example/fns/`, Issuer: actions}},
		Root:       ss.Root(t),
	}
	other := signtest.NewSigstore(t)
	tests := []struct {
		name    string
		bundle  []byte
		trust   sign.Trust
		want    error
		message []string // what the error must name
	}{
		{name: "right identity", bundle: ss.Sign(t, workflow, actions, digestA, signtest.BundleOptions{}), trust: trust},
		{name: "wrong identity", bundle: ss.Sign(t, otherFlow, actions, digestA, signtest.BundleOptions{}), trust: trust,
			want: sign.ErrIdentityMismatch, message: []string{otherFlow, `matching /^https://github\.com/example/fns//`}},
		{name: "wrong issuer", bundle: ss.Sign(t, workflow, otherIssuer, digestA, signtest.BundleOptions{}), trust: trust,
			want: sign.ErrIdentityMismatch, message: []string{otherIssuer, actions}},
		{name: "expired certificate without a timestamp", trust: trust, want: sign.ErrUntrusted,
			bundle: ss.Sign(t, workflow, actions, digestA, signtest.BundleOptions{NoTimestamp: true, At: time.Now().Add(time.Hour)})},
		{name: "another digest", bundle: ss.Sign(t, workflow, actions, digestB, signtest.BundleOptions{}), trust: trust,
			want: sign.ErrOtherDigest, message: []string{digestB.String()}},
		{name: "another Sigstore", bundle: other.Sign(t, workflow, actions, digestA, signtest.BundleOptions{}), trust: trust,
			want: sign.ErrUntrusted, message: []string{"transparency log"}},
		{name: "tlog entry for another artifact", trust: trust, want: sign.ErrUntrusted, message: []string{"log"},
			bundle: spliceTlog(t, ss.Sign(t, workflow, actions, digestA, signtest.BundleOptions{}), ss.Sign(t, workflow, actions, digestB, signtest.BundleOptions{}))},
		{name: "no identity trusted", bundle: ss.Sign(t, workflow, actions, digestA, signtest.BundleOptions{}), trust: sign.Trust{Root: ss.Root(t)},
			want: sign.ErrUntrusted, message: []string{workflow, "--certificate-identity"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := sign.ParseBundle(tt.bundle)
			if err != nil {
				t.Fatal(err)
			}
			by, err := sign.VerifyBundleTrust(b, tt.trust, digestA)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if by.Subject != workflow || by.Issuer != actions || !by.Keyless() {
					t.Errorf("signed by %+v, want %s of %s", by, workflow, actions)
				}
				return
			}
			t.Logf("refused: %v", err)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			for _, m := range tt.message {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
		})
	}
}

// TestVerifyPublicGood verifies a real bundle of the public-good instance, offline, against the
// trusted root shipped in the binary: the provenance sigstore-js v2.0.0's release workflow made,
// kept in testdata/publicgood as sigstore-go v1.3.0's examples hold it.
func TestVerifyPublicGood(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/publicgood/bundle-provenance.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := sign.ParseBundle(raw)
	if err != nil {
		t.Fatal(err)
	}
	subject := digest.Digest("sha512:76176ffa33808b54602c7c35de5c6e9a4deb96066dba6533f50ac234f4f1f4c6b3527515dc17c06fbe2860030f410eee69ea20079bd3a2c6f3dcf3b329b10751")
	id := sign.Identity{Subject: "https://github.com/sigstore/sigstore-js/.github/workflows/release.yml@refs/heads/main", Issuer: "https://token.actions.githubusercontent.com"}
	st, err := sign.VerifyAttestation(b, sign.Trust{Identities: []sign.Identity{id}}, subject)
	if err != nil {
		t.Fatal(err)
	}
	if st.PredicateType != "https://slsa.dev/provenance/v0.2" || st.SignedBy.Subject != id.Subject {
		t.Errorf("statement %s by %s", st.PredicateType, st.SignedBy)
	}
	wrong := sign.Identity{Subject: id.Subject, Issuer: "https://accounts.google.com"}
	if _, err := sign.VerifyAttestation(b, sign.Trust{Identities: []sign.Identity{wrong}}, subject); !errors.Is(err, sign.ErrIdentityMismatch) {
		t.Errorf("wrong issuer: %v, want %v", err, sign.ErrIdentityMismatch)
	}
	if _, err := sign.VerifyAttestation(b, sign.Trust{Identities: []sign.Identity{id}}, digestA); !errors.Is(err, sign.ErrOtherDigest) {
		t.Errorf("another digest: %v, want %v", err, sign.ErrOtherDigest)
	}
}

// spliceTlog puts the transparency-log entries of from into b, as a forger would.
func spliceTlog(t *testing.T, b, from []byte) []byte {
	t.Helper()
	var mb, mf map[string]any
	if err := json.Unmarshal(b, &mb); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(from, &mf); err != nil {
		t.Fatal(err)
	}
	mb["verificationMaterial"].(map[string]any)["tlogEntries"] = mf["verificationMaterial"].(map[string]any)["tlogEntries"]
	out, err := json.Marshal(mb)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestVerifyLegacyKeyless(t *testing.T) {
	t.Parallel()
	ss := signtest.NewSigstore(t)
	payload, err := sign.NewPayload("registry.example.com/fns/set-ns", digestA)
	if err != nil {
		t.Fatal(err)
	}
	trust := sign.Trust{Identities: []sign.Identity{{Subject: workflow, Issuer: actions}}, Root: ss.Root(t)}
	tests := []struct {
		name        string
		annotations map[string]string
		want        error
	}{
		{name: "right identity", annotations: ss.SignLegacy(t, workflow, actions, payload)},
		{name: "wrong identity", annotations: ss.SignLegacy(t, otherFlow, actions, payload), want: sign.ErrIdentityMismatch},
		{name: "wrong issuer", annotations: ss.SignLegacy(t, workflow, otherIssuer, payload), want: sign.ErrIdentityMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			by, err := sign.VerifyLegacy(trust, payload, tt.annotations, digestA)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if err == nil && by.Subject != workflow {
				t.Errorf("signed by %s", by)
			}
		})
	}
	// the same signature is over digestA: asked about digestB, it is a signature moved
	if _, err := sign.VerifyLegacy(trust, payload, tests[0].annotations, digestB); !errors.Is(err, sign.ErrOtherDigest) {
		t.Errorf("another digest: %v, want %v", err, sign.ErrOtherDigest)
	}
}

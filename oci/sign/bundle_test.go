package sign_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// bundleSeeds returns bundles as SignBundle makes them, for fuzzing.
func bundleSeeds(t testing.TB) [][]byte {
	s, _, _ := keyPair(t, "seed")
	b, err := s.SignBundle(context.Background(), digestA)
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{b}
}

// rewritePayload replaces the DSSE payload of a bundle (keeping its signature), as a forger would.
func rewritePayload(t *testing.T, b []byte, edit func(statement map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	env := m["dsseEnvelope"].(map[string]any)
	raw, err := base64.StdEncoding.DecodeString(env["payload"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	edit(st)
	raw, _ = json.Marshal(st)
	env["payload"] = base64.StdEncoding.EncodeToString(raw)
	out, _ := json.Marshal(m)
	return out
}

// signStatement signs an in-toto statement into a bundle with a fresh key, through sigstore-go.
func signStatement(t *testing.T, statement map[string]any) ([]byte, sign.PublicKey) {
	t.Helper()
	kp, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(statement)
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: payload, PayloadType: sign.InTotoPayloadType}, kp, sgsign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&bundle.Bundle{Bundle: pb}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	k, err := sign.NewPublicKey("attester", kp.GetPublicKey())
	if err != nil {
		t.Fatal(err)
	}
	return b, k
}

func TestVerifyBundle(t *testing.T) {
	t.Parallel()
	signer, trusted, _ := keyPair(t, "trusted")
	_, stranger, _ := keyPair(t, "stranger")
	good, err := signer.SignBundle(context.Background(), digestA)
	if err != nil {
		t.Fatal(err)
	}
	otherSubject := rewritePayload(t, good, func(st map[string]any) {
		st["subject"] = []any{map[string]any{"digest": map[string]any{"sha256": digestB.Encoded()}}}
	})
	// An attestation (another predicate type) properly signed, by a key made for it.
	attestation, attester := signStatement(t, map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"digest": map[string]any{"sha256": digestA.Encoded()}}},
		"predicateType": "https://slsa.dev/provenance/v1",
		"predicate":     map[string]any{},
	})
	tests := []struct {
		name    string
		bundle  []byte
		keys    []sign.PublicKey
		want    digest.Digest
		wantErr error
	}{
		{"trusted key", good, []sign.PublicKey{stranger, trusted}, digestA, nil},
		{"wrong key", good, []sign.PublicKey{stranger}, digestA, sign.ErrUntrusted},
		{"signature over another digest", good, []sign.PublicKey{trusted}, digestB, sign.ErrOtherDigest},
		{"statement rewritten to another subject", otherSubject, []sign.PublicKey{trusted}, digestB, sign.ErrUntrusted},
		{"an attestation is not a signature", attestation, []sign.PublicKey{attester}, digestA, sign.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := sign.ParseBundle(tc.bundle)
			if err != nil {
				t.Fatal(err)
			}
			k, err := sign.VerifyBundle(b, tc.keys, tc.want)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && k.ID() != trusted.ID() {
				t.Errorf("verified by %s, want %s", k, trusted)
			}
		})
	}
}

func TestParseBundleRefusals(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"empty object":   `{}`,
		"not json":       `{"mediaType":`,
		"no content":     `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"x"}}}`,
		"unknown future": `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.9+json"}`,
	} {
		if _, err := sign.ParseBundle([]byte(in)); !errors.Is(err, sign.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

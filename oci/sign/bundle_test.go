package sign_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"

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

// TestBundlesAgreeWithSigstoreGo holds the bundle code to sigstore-go, which it replaces in the
// binary: what SignBundle makes, sigstore-go verifies (key-based, offline, over the digest), and
// what sigstore-go signs, VerifyBundle verifies, for both kinds of bundle content.
func TestBundlesAgreeWithSigstoreGo(t *testing.T) {
	t.Parallel()
	signer, pub, _ := keyPair(t, "ours")
	ours, err := signer.SignBundle(context.Background(), digestA)
	if err != nil {
		t.Fatal(err)
	}
	var sb bundle.Bundle
	if err := sb.UnmarshalJSON(ours); err != nil {
		t.Fatalf("sigstore-go refuses our bundle: %v", err)
	}
	trusted := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		v, err := signature.LoadDefaultVerifier(pub.Key, options.WithED25519ph())
		return root.NewExpiringKey(v, time.Time{}, time.Time{}), err
	})
	v, err := verify.NewVerifier(trusted, verify.WithNoObserverTimestamps())
	if err != nil {
		t.Fatal(err)
	}
	wantBytes, _ := hex.DecodeString(digestA.Encoded())
	if _, err := v.Verify(&sb, verify.NewPolicy(verify.WithArtifactDigest("sha256", wantBytes), verify.WithKey())); err != nil {
		t.Errorf("sigstore-go does not verify our bundle: %v", err)
	}

	kp, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	theirKey, err := sign.NewPublicKey("sigstore-go", kp.GetPublicKey())
	if err != nil {
		t.Fatal(err)
	}
	statement, _ := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"digest": map[string]any{"sha256": digestA.Encoded()}}},
		"predicateType": sign.CosignSignPredicateType,
		"predicate":     map[string]any{},
	})
	artifact := []byte("an artifact signed as a message")
	tests := []struct {
		name    string
		content sgsign.Content
		want    digest.Digest
	}{
		{"DSSE envelope", &sgsign.DSSEData{Data: statement, PayloadType: sign.InTotoPayloadType}, digestA},
		{"message signature", &sgsign.PlainData{Data: artifact}, digest.FromBytes(artifact)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pb, err := sgsign.Bundle(tc.content, kp, sgsign.BundleOptions{})
			if err != nil {
				t.Fatal(err)
			}
			data, err := (&bundle.Bundle{Bundle: pb}).MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			b, err := sign.ParseBundle(data)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sign.VerifyBundle(b, []sign.PublicKey{pub, theirKey}, tc.want); err != nil {
				t.Errorf("VerifyBundle: %v", err)
			}
			if _, err := sign.VerifyBundle(b, []sign.PublicKey{pub}, tc.want); !errors.Is(err, sign.ErrUntrusted) {
				t.Errorf("with another key: err = %v, want ErrUntrusted", err)
			}
			if _, err := sign.VerifyBundle(b, []sign.PublicKey{theirKey}, digestB); !errors.Is(err, sign.ErrOtherDigest) {
				t.Errorf("over another digest: err = %v, want ErrOtherDigest", err)
			}
		})
	}
}

package sign_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"

	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

const (
	digestA = digest.Digest("sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120")
	digestB = digest.Digest("sha256:2e59591e0fcab75aba3c9e54e42bdf7bd0e4a9ed8117035b88464c7656e6e0d3")
)

func keyPair(t testing.TB, name string) (*sign.Signer, sign.PublicKey, []byte) {
	t.Helper()
	k := signtest.KeyPair(t, name)
	return k.Signer, k.Public, k.PrivatePEM
}

func TestLoadPrivateKey(t *testing.T) {
	t.Parallel()
	_, _, priv := keyPair(t, "k")
	tests := []struct {
		name     string
		pem      []byte
		password string
		wantErr  string
	}{
		{"right password", priv, signtest.Password, ""},
		{"wrong password", priv, "guess", "decrypt"},
		{"not PEM", []byte("hello"), "secret", "not a PEM file"},
		{"public key instead", []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), "secret", "is not a cosign private key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := sign.LoadPrivateKey(tc.pem, []byte(tc.password))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	t.Parallel()
	b, err := sign.NewPayload("registry.example.com/catalogs/platform", digestA)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"critical":{"identity":{"docker-reference":"registry.example.com/catalogs/platform"},"image":{"docker-manifest-digest":"` + string(digestA) + `"},"type":"cosign container image signature"},"optional":null}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("payload differs from what cosign signs (-want +got):\n%s", diff)
	}
	p, err := sign.ParsePayload(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sign.Payload{DockerReference: "registry.example.com/catalogs/platform", Digest: digestA}, p); diff != "" {
		t.Error(diff)
	}
}

func TestParsePayloadRefusals(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"other type":  `{"critical":{"identity":{"docker-reference":"r/x"},"image":{"docker-manifest-digest":"` + string(digestA) + `"},"type":"atomic container signature"}}`,
		"bad digest":  `{"critical":{"identity":{"docker-reference":"r/x"},"image":{"docker-manifest-digest":"sha256:abc"},"type":"cosign container image signature"}}`,
		"not json":    `{"critical":`,
		"wrong shape": `{"critical":[]}`,
	} {
		if _, err := sign.ParsePayload([]byte(in)); !errors.Is(err, sign.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestVerifyPayload(t *testing.T) {
	t.Parallel()
	signer, trusted, _ := keyPair(t, "trusted")
	_, stranger, _ := keyPair(t, "stranger")
	payload, err := sign.NewPayload("registry.example.com/x", digestA)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(sig)
	flipped := append([]byte(nil), sig...)
	flipped[len(flipped)/2] ^= 1
	tests := []struct {
		name    string
		keys    []sign.PublicKey
		payload []byte
		sig     string
		want    digest.Digest
		wantErr error
	}{
		{"trusted key", []sign.PublicKey{stranger, trusted}, payload, b64, digestA, nil},
		{"wrong key", []sign.PublicKey{stranger}, payload, b64, digestA, sign.ErrUntrusted},
		{"no keys", nil, payload, b64, digestA, sign.ErrUntrusted},
		{"other digest", []sign.PublicKey{trusted}, payload, b64, digestB, sign.ErrOtherDigest},
		{"tampered signature", []sign.PublicKey{trusted}, payload, base64.StdEncoding.EncodeToString(flipped), digestA, sign.ErrUntrusted},
		{"tampered payload", []sign.PublicKey{trusted}, []byte(strings.Replace(string(payload), "registry.example.com", "registry.example.org", 1)), b64, digestA, sign.ErrUntrusted},
		{"not base64", []sign.PublicKey{trusted}, payload, "%%%", digestA, sign.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, err := sign.VerifyPayload(tc.keys, tc.payload, tc.sig, tc.want)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && k.ID() != trusted.ID() {
				t.Errorf("verified by %s, want %s", k, trusted)
			}
		})
	}
}

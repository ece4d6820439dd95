package identity_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"

	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/identity/identitytest"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

const (
	ghIssuer   = "https://token.actions.githubusercontent.com"
	ghWorkflow = "https://github.com/acme/fns/.github/workflows/release.yml@refs/tags/v1.2.0"
)

func TestPatternValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    identity.Pattern
		bad  string // "" when valid
	}{
		{"workflow on tags", identity.Pattern{ghIssuer, "https://github.com/acme/fns/.github/workflows/release.yml@refs/tags/*"}, ""},
		{"exact workflow", identity.Pattern{ghIssuer, ghWorkflow}, ""},
		{"any repository of an org", identity.Pattern{ghIssuer, "https://github.com/acme/*"}, ""},
		{"email", identity.Pattern{"https://accounts.google.com", "alice@example.com"}, ""},
		{"empty issuer", identity.Pattern{"", ghWorkflow}, "issuer is empty"},
		{"http issuer", identity.Pattern{"http://issuer.example", ghWorkflow}, "https URL"},
		{"issuer with star", identity.Pattern{"https://*.example", ghWorkflow}, "https URL"},
		{"empty subject", identity.Pattern{ghIssuer, ""}, "subject is empty"},
		{"everyone", identity.Pattern{ghIssuer, "*"}, "only allowed in a URL"},
		{"every org", identity.Pattern{ghIssuer, "https://github.com/*"}, "first path segment"},
		{"star in org", identity.Pattern{ghIssuer, "https://github.com/acme*/x"}, "first path segment"},
		{"email star", identity.Pattern{"https://accounts.google.com", "*@example.com"}, "only allowed in a URL"},
		{"space", identity.Pattern{ghIssuer, "https://github.com/acme/a b"}, "space"},
		{"newline", identity.Pattern{ghIssuer, "https://github.com/acme/\n"}, "space"},
		{"too long", identity.Pattern{ghIssuer, "https://github.com/acme/" + strings.Repeat("a", 1024)}, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.p.Validate()
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, identity.ErrBadPattern) || !strings.Contains(err.Error(), tc.bad) {
				t.Fatalf("Validate = %v, want ErrBadPattern with %q", err, tc.bad)
			}
		})
	}
}

func TestPatternMatches(t *testing.T) {
	t.Parallel()
	p := identity.Pattern{Issuer: ghIssuer, Subject: "https://github.com/acme/fns/.github/workflows/release.yml@refs/tags/*"}
	for _, tc := range []struct {
		issuer, subject string
		want            bool
	}{
		{ghIssuer, ghWorkflow, true},
		{ghIssuer, "https://github.com/acme/fns/.github/workflows/release.yml@refs/tags/release/v1", true},
		{ghIssuer, "https://github.com/acme/fns/.github/workflows/release.yml@refs/heads/main", false},
		{ghIssuer, "https://github.com/acme/fns/.github/workflows/other.yml@refs/tags/v1", false},
		{"https://gitlab.example", ghWorkflow, false},
		{ghIssuer, "xhttps://github.com/acme/fns/.github/workflows/release.yml@refs/tags/v1", false},
	} {
		if got := p.Matches(tc.issuer, tc.subject); got != tc.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tc.issuer, tc.subject, got, tc.want)
		}
	}
}

func TestVerifyChallenge(t *testing.T) {
	t.Parallel()
	vs := identitytest.New(t)
	v := vs.Verifier(t)
	other := identitytest.New(t)
	c := identity.Challenge{Publisher: "acme.dev", Nonce: "bm9uY2Vub25jZW5vbmNlbm9uY2U", ExpiresAt: time.Now().Add(time.Minute)}
	pattern := identity.Pattern{Issuer: ghIssuer, Subject: "https://github.com/acme/fns/.github/workflows/release.yml@refs/tags/*"}
	for _, tc := range []struct {
		name    string
		bundle  []byte
		pattern identity.Pattern
		want    error
		says    string
	}{
		{"matching identity", vs.SignBlob(t, ghWorkflow, ghIssuer, c.Payload()), pattern, nil, ""},
		{"another workflow", vs.SignBlob(t, "https://github.com/acme/fns/.github/workflows/ci.yml@refs/heads/main", ghIssuer, c.Payload()), pattern, identity.ErrKeylessMismatch, "ci.yml"},
		{"another issuer", vs.SignBlob(t, ghWorkflow, "https://gitlab.example", c.Payload()), pattern, identity.ErrKeylessMismatch, "gitlab.example"},
		{"other bytes", vs.SignBlob(t, ghWorkflow, ghIssuer, []byte("something else")), pattern, identity.ErrKeylessUnverified, ""},
		{"another Sigstore", other.SignBlob(t, ghWorkflow, ghIssuer, c.Payload()), pattern, identity.ErrKeylessUnverified, ""},
		{"bad pattern", vs.SignBlob(t, ghWorkflow, ghIssuer, c.Payload()), identity.Pattern{Issuer: ghIssuer, Subject: "*"}, identity.ErrBadPattern, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := v.VerifyChallenge(c, identity.KeylessProof{Pattern: tc.pattern, Nonce: c.Nonce, Bundle: tc.bundle})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("VerifyChallenge: %v", err)
				}
				if s.Subject != ghWorkflow || s.Issuer != ghIssuer {
					t.Fatalf("signer = %+v", s)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("VerifyChallenge = %v, want %v naming %q", err, tc.want, tc.says)
			}
		})
	}
}

func TestVerifyDigest(t *testing.T) {
	t.Parallel()
	vs := identitytest.New(t)
	v := vs.Verifier(t)
	manifest := []byte(`{"schemaVersion":2}`)
	d := digest.FromBytes(manifest)
	otherD := digest.FromString("other")
	const signPredicate = "https://sigstore.dev/cosign/sign/v1"
	patterns := []identity.Pattern{{Issuer: "https://accounts.example", Subject: "bob@example.com"}, {Issuer: ghIssuer, Subject: "https://github.com/acme/*"}}
	for _, tc := range []struct {
		name   string
		bundle []byte
		want   error
	}{
		{"message signature over the manifest", vs.SignBlob(t, ghWorkflow, ghIssuer, manifest), nil},
		{"cosign statement", vs.SignStatement(t, ghWorkflow, ghIssuer, identitytest.Statement(t, d.Encoded(), signPredicate, map[string]any{})), nil},
		{"statement for another digest", vs.SignStatement(t, ghWorkflow, ghIssuer, identitytest.Statement(t, otherD.Encoded(), signPredicate, map[string]any{})), identity.ErrKeylessUnverified},
		{"attestation, not a signature", vs.SignStatement(t, ghWorkflow, ghIssuer, identitytest.Statement(t, d.Encoded(), "https://slsa.dev/provenance/v1", map[string]any{})), identity.ErrKeylessMismatch},
		{"unregistered identity", vs.SignBlob(t, "https://github.com/mallory/fns/.github/workflows/r.yml@refs/tags/v1", ghIssuer, manifest), identity.ErrKeylessMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _, err := v.VerifyDigest(tc.bundle, d, patterns, signPredicate)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("VerifyDigest: %v", err)
				}
				if s.Subject != ghWorkflow {
					t.Fatalf("signer = %+v", s)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("VerifyDigest = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestPublicGoodBundle verifies a real public-good bundle offline against the embedded root: the
// SLSA provenance npm published for sigstore-js 1.3.0 (sigstore-go's examples), signed by
// sigstore-js's release workflow through GitHub Actions' OIDC.
func TestPublicGoodBundle(t *testing.T) {
	t.Parallel()
	tr, err := sign.PublicGoodRoot()
	if err != nil {
		t.Fatal(err)
	}
	v, err := identity.NewVerifier(tr)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../oci/sign/testdata/publicgood/bundle-provenance.json")
	if err != nil {
		t.Fatal(err)
	}
	const (
		npmDigest = digest.Digest("sha512:76176ffa33808b54602c7c35de5c6e9a4deb96066dba6533f50ac234f4f1f4c6b3527515dc17c06fbe2860030f410eee69ea20079bd3a2c6f3dcf3b329b10751")
		workflow  = "https://github.com/sigstore/sigstore-js/.github/workflows/release.yml@refs/heads/main"
	)
	for _, tc := range []struct {
		name    string
		d       digest.Digest
		pattern identity.Pattern
		want    error
	}{
		{"its workflow", npmDigest, identity.Pattern{Issuer: ghIssuer, Subject: "https://github.com/sigstore/sigstore-js/.github/workflows/release.yml@*"}, nil},
		{"another repository", npmDigest, identity.Pattern{Issuer: ghIssuer, Subject: "https://github.com/sigstore/cosign/*"}, identity.ErrKeylessMismatch},
		{"another artifact", digest.Digest("sha512:" + strings.Repeat("0", 128)), identity.Pattern{Issuer: ghIssuer, Subject: workflow}, identity.ErrKeylessUnverified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, st, err := v.VerifyDigest(data, tc.d, []identity.Pattern{tc.pattern}, identity.SLSAProvenanceV02)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("VerifyDigest = %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Subject != workflow || s.Issuer != ghIssuer {
				t.Errorf("signer = %+v", s)
			}
			p, err := identity.ParseProvenance(st.PredicateType, st.Predicate)
			if err != nil {
				t.Fatal(err)
			}
			want := identity.Provenance{PredicateType: identity.SLSAProvenanceV02, BuilderID: "https://github.com/actions/runner", BuildType: "https://github.com/npm/cli/gha/v2",
				SourceRepo: "https://github.com/sigstore/sigstore-js", SourceRef: "refs/heads/main", SourceCommit: "dae8bd8eb433a4147b4655c00fe73e0f22bc0fb1"}
			if diff := cmp.Diff(want, p); diff != "" {
				t.Errorf("provenance (-want +got):\n%s", diff)
			}
		})
	}
}

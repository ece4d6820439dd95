package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/identity/identitytest"
	"github.com/krm-catalog/krm-catalog/store"
)

const (
	ghIssuer   = "https://token.actions.githubusercontent.com"
	ghWorkflow = "https://github.com/example/fns/.github/workflows/release.yml@refs/tags/v1.0.0"
)

func TestAddIdentityNeedsKeylessProof(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	mustToken(t, s, "other.org")
	vs := identitytest.New(t)
	v := vs.Verifier(t)
	pattern := identity.Pattern{Issuer: ghIssuer, Subject: "https://github.com/example/fns/.github/workflows/release.yml@refs/tags/*"}
	answer := func(publisher, subject, issuer string) identity.KeylessProof {
		c, err := s.IssueChallenge(ctx, publisher, identity.ChallengeTTL)
		if err != nil {
			t.Fatal(err)
		}
		return identity.KeylessProof{Pattern: pattern, Nonce: c.Nonce, Bundle: vs.SignBlob(t, subject, issuer, c.Payload())}
	}
	otherChallenge := answer("other.org", ghWorkflow, ghIssuer)
	for _, tc := range []struct {
		name  string
		proof identity.KeylessProof
		want  error
		says  string
	}{
		{"another workflow signed", answer("example.com", "https://github.com/example/fns/.github/workflows/ci.yml@refs/heads/main", ghIssuer), store.ErrForbidden, "ci.yml"},
		{"another issuer", answer("example.com", ghWorkflow, "https://issuer.example"), store.ErrForbidden, "issuer.example"},
		{"another publisher's challenge", otherChallenge, store.ErrForbidden, "no open challenge"},
		{"a pattern for everyone", func() identity.KeylessProof {
			p := answer("example.com", ghWorkflow, ghIssuer)
			p.Subject = "*"
			return p
		}(), store.ErrInvalid, "only allowed in a URL"},
		{"not a bundle", func() identity.KeylessProof {
			p := answer("example.com", ghWorkflow, ghIssuer)
			p.Bundle = []byte(`{"mediaType": "nonsense"}`)
			return p
		}(), store.ErrInvalid, "bundle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.AddIdentity(ctx, "example.com", tc.proof, v)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("AddIdentity = %v, want %v naming %q", err, tc.want, tc.says)
			}
		})
	}

	// a signed check made before the identity is forgotten: the identity may verify it
	if err := s.SaveSignatureCheck(ctx, "example.com", store.SignatureCheck{Subject: "127.0.0.1:5000/x@sha256:01", Status: "signed"}); err != nil {
		t.Fatal(err)
	}
	good := answer("example.com", ghWorkflow, ghIssuer)
	id, created, err := s.AddIdentity(ctx, "example.com", good, v)
	if err != nil || !created {
		t.Fatalf("AddIdentity = %v created %v", err, created)
	}
	if got, _ := s.SignatureChecks(ctx, "example.com", []string{"127.0.0.1:5000/x@sha256:01"}, time.Hour); len(got) != 0 {
		t.Errorf("a signed check survived a new identity: %+v", got)
	}
	if _, _, err := s.AddIdentity(ctx, "example.com", good, v); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("a used challenge: %v, want ErrForbidden", err)
	}
	if _, created, err := s.AddIdentity(ctx, "example.com", answer("example.com", ghWorkflow, ghIssuer), v); err != nil || created {
		t.Errorf("registering it again: created %v, %v; want an existing identity", created, err)
	}
	listed, err := s.ListIdentities(ctx, "example.com")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.Identity{id}, listed); diff != "" {
		t.Errorf("ListIdentities (-want +got):\n%s", diff)
	}

	// keyless checks are forgotten when an identity goes; key checks stay
	for _, c := range []store.SignatureCheck{
		{Subject: "127.0.0.1:5000/keyless@sha256:02", Status: "verified", Signer: identity.Signer{Issuer: ghIssuer, Subject: ghWorkflow},
			Attestations: &identity.Attestations{SBOMs: []identity.SBOM{{ArtifactType: "application/spdx+json", Manifest: "sha256:03", Layer: "sha256:04", Size: 10}}}},
		{Subject: "127.0.0.1:5000/key@sha256:05", Status: "verified", Signer: identity.Signer{Key: "ab12"}},
	} {
		if err := s.SaveSignatureCheck(ctx, "example.com", c); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.SignatureChecks(ctx, "example.com", []string{"127.0.0.1:5000/keyless@sha256:02"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if c := got["127.0.0.1:5000/keyless@sha256:02"]; c.Signer.Subject != ghWorkflow || c.Attestations == nil || len(c.Attestations.SBOMs) != 1 {
		t.Errorf("the keyless check read back as %+v", c)
	}
	if err := s.DeleteIdentity(ctx, "example.com", pattern); err != nil {
		t.Fatal(err)
	}
	got, _ = s.SignatureChecks(ctx, "example.com", []string{"127.0.0.1:5000/keyless@sha256:02", "127.0.0.1:5000/key@sha256:05"}, time.Hour)
	if _, ok := got["127.0.0.1:5000/keyless@sha256:02"]; ok {
		t.Errorf("a keyless check survived the identity's removal")
	}
	if _, ok := got["127.0.0.1:5000/key@sha256:05"]; !ok {
		t.Errorf("a key's check was dropped with an identity")
	}
	if err := s.DeleteIdentity(ctx, "example.com", pattern); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("removing a removed identity: %v", err)
	}
	history, err := s.IdentityHistory(ctx, "example.com")
	if err != nil || len(history) != 1 || history[0].RemovedAt == nil {
		t.Errorf("IdentityHistory = %+v %v, want one removed", history, err)
	}
}

package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
	"github.com/krm-catalog/krm-catalog/store"
)

// prove asks s for a challenge for publisher and answers it with keys.
func prove(t *testing.T, s *store.Store, publisher string, keys signtest.Keys) identity.Proof {
	t.Helper()
	c, err := s.IssueChallenge(context.Background(), publisher, identity.ChallengeTTL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := identity.Answer(c, publisher, keys.Signer)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAddKeyNeedsProofOfPossession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	mustToken(t, s, "other.org")
	mine, theirs := signtest.KeyPair(t, "mine"), signtest.KeyPair(t, "theirs")

	// the attack: example.com posts other.org's public key, but can only sign with its own
	stolen := prove(t, s, "example.com", mine)
	stolen.PublicKey = string(theirs.PublicPEM)
	if _, _, err := s.AddKey(ctx, "example.com", stolen); !errors.Is(err, store.ErrForbidden) || !strings.Contains(err.Error(), theirs.Public.ID()) {
		t.Errorf("registering a key it cannot sign with: %v, want ErrForbidden naming the key", err)
	}
	// the nonce was used up by the failed attempt
	if _, _, err := s.AddKey(ctx, "example.com", identity.Proof{PublicKey: string(mine.PublicPEM), Nonce: stolen.Nonce, Signature: stolen.Signature}); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("a used challenge: %v, want ErrForbidden", err)
	}
	// a challenge issued to other.org does not serve example.com, even signed right
	forOther, err := s.IssueChallenge(ctx, "other.org", identity.ChallengeTTL)
	if err != nil {
		t.Fatal(err)
	}
	asIfMine := forOther
	asIfMine.Publisher = "example.com"
	p, err := identity.Answer(asIfMine, "example.com", mine.Signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddKey(ctx, "example.com", p); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("another publisher's challenge: %v, want ErrForbidden", err)
	}
	// an expired challenge
	expired, err := s.IssueChallenge(ctx, "example.com", -time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p, err = identity.Answer(expired, "example.com", mine.Signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddKey(ctx, "example.com", p); !errors.Is(err, store.ErrForbidden) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired challenge: %v, want ErrForbidden (expired)", err)
	}
	// a bare public key, no signature
	bare := prove(t, s, "example.com", mine)
	bare.Signature = ""
	if _, _, err := s.AddKey(ctx, "example.com", bare); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a bare public key: %v, want ErrInvalid", err)
	}
	if keys, _ := s.KeyHistory(ctx, "example.com"); len(keys) != 0 {
		t.Fatalf("refused keys were stored: %+v", keys)
	}

	k, created, err := s.AddKey(ctx, "example.com", prove(t, s, "example.com", mine))
	if err != nil || !created || k.Fingerprint != mine.Public.ID() || k.ProvenAt == nil {
		t.Fatalf("AddKey with proof = %+v %v %v", k, created, err)
	}
	if again, created, err := s.AddKey(ctx, "example.com", prove(t, s, "example.com", mine)); err != nil || created || !again.CreatedAt.Equal(k.CreatedAt) {
		t.Errorf("the same key again: %+v, created %v, %v; want the key as registered first", again, created, err)
	}
}

func TestChallengesAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	keys := signtest.KeyPair(t, "k")
	first := prove(t, s, "example.com", keys)
	for range 16 {
		if _, err := s.IssueChallenge(ctx, "example.com", identity.ChallengeTTL); err != nil {
			t.Fatal(err)
		}
	}
	// sixteen newer challenges pushed the first out
	if _, _, err := s.AddKey(ctx, "example.com", first); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("the oldest of 17 open challenges: %v, want ErrForbidden", err)
	}
	if _, err := s.IssueChallenge(ctx, "nobody.example", identity.ChallengeTTL); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a challenge for an unknown publisher: %v", err)
	}
}

func TestRemovedKeysKeepHistoryAndRedoChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	a, b := signtest.KeyPair(t, "a"), signtest.KeyPair(t, "b")
	for _, k := range []signtest.Keys{a, b} {
		if _, _, err := s.AddKey(ctx, "example.com", prove(t, s, "example.com", k)); err != nil {
			t.Fatal(err)
		}
	}
	checks := []store.SignatureCheck{
		{Subject: "127.0.0.1:5000/by-a@sha256:0a", Status: "verified", Signer: identity.Signer{Key: a.Public.ID()}},
		{Subject: "127.0.0.1:5000/by-b@sha256:0b", Status: "verified", Signer: identity.Signer{Key: b.Public.ID()}},
		{Subject: "127.0.0.1:5000/by-someone@sha256:0c", Status: "verified"}, // which key is not recorded
		{Subject: "127.0.0.1:5000/foreign@sha256:0d", Status: "signed"},
		{Subject: "127.0.0.1:5000/bare@sha256:0e", Status: "unsigned"},
	}
	subjects := make([]string, len(checks))
	for i, c := range checks {
		subjects[i] = c.Subject
		if err := s.SaveSignatureCheck(ctx, "example.com", c); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.SignatureChecks(ctx, "example.com", subjects, 0); len(got) != 0 {
		t.Errorf("a check older than maxAge is returned: %+v", got)
	}
	if err := s.DeleteKey(ctx, "example.com", a.Public.ID()); err != nil {
		t.Fatal(err)
	}
	// what a verified, or may have: checked again; the rest stands
	got, err := s.SignatureChecks(ctx, "example.com", subjects, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, false, true, true} {
		if _, ok := got[subjects[i]]; ok != want {
			t.Errorf("after removing key a, the check of %s kept: %v, want %v", subjects[i], ok, want)
		}
	}
	if err := s.DeleteKey(ctx, "example.com", a.Public.ID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("removing a removed key: %v", err)
	}
	active, err := s.ListKeys(ctx, "example.com")
	if err != nil || len(active) != 1 || active[0].Fingerprint != b.Public.ID() {
		t.Errorf("ListKeys = %+v %v, want key b only", active, err)
	}
	history, err := s.KeyHistory(ctx, "example.com")
	if err != nil || len(history) != 2 || history[0].RemovedAt == nil || history[0].RemovedReason == "" || history[1].RemovedAt != nil {
		t.Fatalf("KeyHistory = %+v %v, want a removed and b active", history, err)
	}
	// a new key may verify what was only signed
	if _, _, err := s.AddKey(ctx, "example.com", prove(t, s, "example.com", a)); err != nil {
		t.Fatalf("registering a removed key again: %v", err)
	}
	got, _ = s.SignatureChecks(ctx, "example.com", subjects, time.Hour)
	if _, ok := got[checks[3].Subject]; ok {
		t.Errorf("a 'signed' check survived a new key")
	}
	if h, _ := s.KeyHistory(ctx, "example.com"); len(h) != 3 {
		t.Errorf("history after registering a again: %d keys, want 3", len(h))
	}

	fa, fb := a.Public.ID(), b.Public.ID()
	want := []string{"key.add example.com key " + fa, "key.delete example.com key " + fa, "key.add example.com key " + fb, "key.add example.com key " + fa}
	if diff := cmp.Diff(want, auditLog(t, s, "key.")); diff != "" {
		t.Errorf("audit log of key changes (-want +got):\n%s", diff)
	}
}

package identity

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// Pattern is an identity a publisher registers: the OIDC issuer that vouches for the signer, exact,
// and the certificate subject (the SAN: an email, or a CI workflow's URI), where `*` stands for any
// run of characters. A GitHub release workflow signing tags is
// {https://token.actions.githubusercontent.com,
// https://github.com/ORG/REPO/.github/workflows/release.yml@refs/tags/*}.
type Pattern struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
}

// maxPatternLen bounds an issuer or a subject pattern: real ones are a few hundred bytes.
const maxPatternLen = 1024

// ErrBadPattern is an identity pattern that cannot be registered.
var ErrBadPattern = errors.New("invalid identity pattern")

// Validate refuses a pattern that matches more signers than one publisher can answer for: the
// issuer must be an https URL, exact; a subject with `*` must be a URL whose host and first path
// segment (a GitHub organisation, a GitLab group) come before the first `*`, so that a pattern can
// never stand for everyone an issuer vouches for. An email subject is exact.
func (p Pattern) Validate() error {
	if err := checkText("issuer", p.Issuer); err != nil {
		return err
	}
	u, err := url.Parse(p.Issuer)
	if err != nil || u.Scheme != "https" || u.Host == "" || strings.Contains(p.Issuer, "*") {
		return fmt.Errorf("%w: the issuer %q must be an https URL, without `*`", ErrBadPattern, p.Issuer)
	}
	if err := checkText("subject", p.Subject); err != nil {
		return err
	}
	star := strings.IndexByte(p.Subject, '*')
	if star < 0 {
		return nil
	}
	prefix := p.Subject[:star]
	scheme, rest, ok := strings.Cut(prefix, "://")
	if !ok || (scheme != "https" && scheme != "http") {
		return fmt.Errorf("%w: `*` is only allowed in a URL subject (a CI workflow), not in %q", ErrBadPattern, p.Subject)
	}
	host, path, _ := strings.Cut(rest, "/")
	first, _, ok := strings.Cut(path, "/")
	if host == "" || first == "" || !ok {
		return fmt.Errorf("%w: in %q the host and the first path segment, up to its `/`, must come before any `*`", ErrBadPattern, p.Subject)
	}
	return nil
}

func checkText(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: the %s is empty", ErrBadPattern, what)
	case len(s) > maxPatternLen:
		return fmt.Errorf("%w: the %s is longer than %d bytes", ErrBadPattern, what, maxPatternLen)
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar }) >= 0:
		return fmt.Errorf("%w: the %s %q holds a space or a control character", ErrBadPattern, what, s)
	}
	return nil
}

// subjectRegexp is the anchored regular expression of the subject pattern.
func (p Pattern) subjectRegexp() string {
	parts := strings.Split(p.Subject, "*")
	for i, s := range parts {
		parts[i] = regexp.QuoteMeta(s)
	}
	return "^" + strings.Join(parts, ".*") + "$"
}

// Matches says whether a certificate with this issuer and subject is the pattern's.
func (p Pattern) Matches(issuer, subject string) bool {
	if issuer != p.Issuer {
		return false
	}
	re, err := regexp.Compile(p.subjectRegexp())
	return err == nil && re.MatchString(subject)
}

func (p Pattern) String() string { return p.Subject + " (issuer " + p.Issuer + ")" }

func (p Pattern) certificateIdentity() (verify.CertificateIdentity, error) {
	return verify.NewShortCertificateIdentity(p.Issuer, "", "", p.subjectRegexp())
}

// Identity is an identity pattern a publisher registered, with proof; a removed one stays, as
// history, with RemovedAt set.
type Identity struct {
	Publisher string `json:"publisher"`
	Pattern
	CreatedAt     time.Time  `json:"createdAt"`
	ProvenAt      *time.Time `json:"provenAt,omitempty"`
	RemovedAt     *time.Time `json:"removedAt,omitempty"`
	RemovedReason string     `json:"removedReason,omitempty"`
}

// KeylessProof answers a challenge keylessly: the identity pattern to register, the nonce, and a
// sigstore bundle over the challenge's payload (as `cosign sign-blob --bundle` makes it) whose
// certificate the pattern matches.
type KeylessProof struct {
	Pattern
	Nonce  string          `json:"nonce"`
	Bundle json.RawMessage `json:"bundle"`
}

// Signer names who made a signature that verified: a registered key, or a certificate that a
// registered identity pattern matched.
type Signer struct {
	// Key is the fingerprint of the key; "" for a keyless signature.
	Key string `json:"key,omitempty"`
	// Issuer and Subject are the certificate's, for a keyless signature.
	Issuer  string `json:"issuer,omitempty"`
	Subject string `json:"subject,omitempty"`
}

// IsZero says whether s names nobody.
func (s Signer) IsZero() bool { return s == Signer{} }

func (s Signer) String() string {
	if s.Key != "" {
		return "key " + s.Key
	}
	return s.Subject + " (issuer " + s.Issuer + ")"
}

// ErrKeylessUnverified is a bundle that does not verify against the trusted root: a certificate
// from another CA, a signature over other bytes, no transparency log entry or timestamp.
var ErrKeylessUnverified = errors.New("the keyless signature does not verify against the trusted root")

// ErrKeylessMismatch is a keyless signature that verifies against the trusted root but whose
// certificate no registered identity matches, or whose content is not over the expected bytes.
var ErrKeylessMismatch = errors.New("the keyless signature does not match")

// Verifier checks sigstore bundles signed keylessly against a trusted root, offline: the
// certificate chains to a Fulcio CA, the signature is in a transparency log (inclusion proof or
// signed entry timestamp) or timestamped, within the certificate's validity. A certificate must
// carry an SCT when the trusted root lists CT logs.
type Verifier struct {
	v *verify.Verifier
}

// NewVerifier returns a Verifier for trusted.
func NewVerifier(trusted root.TrustedMaterial) (*Verifier, error) {
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
	if len(trusted.RekorLogs()) > 0 {
		opts = append(opts, verify.WithTransparencyLog(1))
	}
	if len(trusted.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	v, err := verify.NewVerifier(trusted, opts...)
	if err != nil {
		return nil, fmt.Errorf("keyless verifier: %w", err)
	}
	return &Verifier{v: v}, nil
}

// maxBundleBytes bounds a bundle: a certificate chain, a tlog entry and a signature are a few KiB.
const maxBundleBytes = 1 << 20

// ParseBundle reads a sigstore bundle (v0.1 to v0.3) as JSON.
func ParseBundle(data []byte) (*bundle.Bundle, error) {
	if len(data) > maxBundleBytes {
		return nil, fmt.Errorf("the bundle is larger than %d bytes", maxBundleBytes)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("read the sigstore bundle: %w", err)
	}
	return &b, nil
}

// VerifyChallenge checks a keyless proof: its bundle signs c's payload, with a certificate the
// proof's pattern matches. It returns the certificate's identity. A bundle that is not over the
// payload or not by the pattern is ErrKeylessMismatch (naming what did not match); one that does
// not verify against the trusted root is ErrKeylessUnverified.
func (v *Verifier) VerifyChallenge(c Challenge, p KeylessProof) (Signer, error) {
	if err := p.Pattern.Validate(); err != nil {
		return Signer{}, err
	}
	b, err := ParseBundle(p.Bundle)
	if err != nil {
		return Signer{}, err
	}
	return v.verify(b, verify.WithArtifact(bytes.NewReader(c.Payload())), []Pattern{p.Pattern})
}

// Statement is the verified in-toto statement of a DSSE bundle: its predicate type and predicate.
// A message signature has none.
type Statement struct {
	PredicateType string
	Predicate     json.RawMessage
}

// VerifyDigest checks a bundle signing the artifact d (a manifest digest), as cosign signs an
// image keylessly, by a certificate one of patterns matches. A bundle holding an in-toto statement
// must have d among its subjects and one of the predicate types accept (cosign's signature
// predicate, an attestation's); it returns the verified statement with the signer.
func (v *Verifier) VerifyDigest(data []byte, d digest.Digest, patterns []Pattern, accept ...string) (Signer, Statement, error) {
	if len(patterns) == 0 {
		return Signer{}, Statement{}, fmt.Errorf("%w: no registered identity", ErrKeylessMismatch)
	}
	if err := d.Validate(); err != nil || (d.Algorithm() != digest.SHA256 && d.Algorithm() != digest.SHA512) {
		return Signer{}, Statement{}, fmt.Errorf("the artifact digest %q is not sha256 or sha512", d)
	}
	raw, _ := hex.DecodeString(d.Encoded())
	b, err := ParseBundle(data)
	if err != nil {
		return Signer{}, Statement{}, err
	}
	var st Statement
	if env := b.GetDsseEnvelope(); env != nil {
		var body struct {
			PredicateType string          `json:"predicateType"`
			Predicate     json.RawMessage `json:"predicate"`
		}
		if env.GetPayloadType() != "application/vnd.in-toto+json" || json.Unmarshal(env.GetPayload(), &body) != nil {
			return Signer{}, Statement{}, fmt.Errorf("%w: the bundle's envelope is not an in-toto statement", ErrKeylessMismatch)
		}
		if !slices.Contains(accept, body.PredicateType) {
			return Signer{}, Statement{}, fmt.Errorf("%w: the statement's predicateType is %q, not %s", ErrKeylessMismatch, body.PredicateType, strings.Join(accept, " or "))
		}
		st = Statement{PredicateType: body.PredicateType, Predicate: body.Predicate}
	}
	s, err := v.verify(b, verify.WithArtifactDigest(string(d.Algorithm()), raw), patterns)
	if err != nil {
		return Signer{}, Statement{}, err
	}
	return s, st, nil
}

func (v *Verifier) verify(b *bundle.Bundle, artifact verify.ArtifactPolicyOption, patterns []Pattern) (Signer, error) {
	if vc, err := b.VerificationContent(); err != nil || vc.Certificate() == nil {
		return Signer{}, fmt.Errorf("%w: the bundle holds no certificate (a key-signed bundle is checked against registered keys)", ErrKeylessMismatch)
	}
	opts := make([]verify.PolicyOption, 0, len(patterns))
	for _, p := range patterns {
		id, err := p.certificateIdentity()
		if err != nil {
			return Signer{}, fmt.Errorf("%w: %s", ErrBadPattern, err)
		}
		opts = append(opts, verify.WithCertificateIdentity(id))
	}
	res, err := v.v.Verify(b, verify.NewPolicy(artifact, opts...))
	if err != nil {
		var mismatch *verify.ErrNoMatchingCertificateIdentity
		if errors.As(err, &mismatch) {
			return Signer{}, fmt.Errorf("%w: the certificate's identity is not %s: %s", ErrKeylessMismatch, describe(patterns), err)
		}
		return Signer{}, fmt.Errorf("%w: %s", ErrKeylessUnverified, err)
	}
	if res.Signature == nil || res.Signature.Certificate == nil {
		return Signer{}, fmt.Errorf("%w: no certificate was verified", ErrKeylessMismatch)
	}
	cert := res.Signature.Certificate
	return Signer{Issuer: cert.Issuer, Subject: cert.SubjectAlternativeName}, nil
}

func describe(patterns []Pattern) string {
	s := make([]string, len(patterns))
	for i, p := range patterns {
		s[i] = p.String()
	}
	return strings.Join(s, " or ")
}

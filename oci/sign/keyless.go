package sign

import (
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/opencontainers/go-digest"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// publicGoodRoot is the trusted root of Sigstore's public-good instance (Fulcio, Rekor, CT log
// and timestamp keys), as sigstore-go v1.3.0 ships it in examples/trusted-root-public-good.json.
// It is a dated snapshot, not fetched over TUF: verification needs no network, and a deployment
// that needs a newer root passes its own with --trusted-root.
//
//go:embed trustedroot/public-good.json
var publicGoodRoot []byte

// PublicGoodRootSource says where the embedded trusted root comes from, for messages and docs.
const PublicGoodRootSource = "Sigstore public-good trusted root, snapshot of sigstore-go v1.3.0 (2026-07-30)"

// PublicGoodRoot parses the embedded public-good trusted root.
func PublicGoodRoot() (*root.TrustedRoot, error) {
	tr, err := root.NewTrustedRootFromJSON(publicGoodRoot)
	if err != nil {
		return nil, fmt.Errorf("embedded trusted root: %w", err)
	}
	return tr, nil
}

// LoadTrustedRoot reads a trusted_root.json as cosign and sigstore-go take it; "" is the embedded
// public-good root.
func LoadTrustedRoot(path string) (*root.TrustedRoot, error) {
	if path == "" {
		return PublicGoodRoot()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trusted root: %w", err)
	}
	tr, err := root.NewTrustedRootFromJSON(b)
	if err != nil {
		return nil, fmt.Errorf("trusted root %s: %w", path, err)
	}
	return tr, nil
}

// Identity is a keyless signer the caller trusts: the subject of a Fulcio certificate (an e-mail
// address, or a workflow URI for CI) and the OIDC issuer that vouched for it, each exact or a
// regular expression. A certificate matches when every field given matches.
type Identity struct {
	Subject       string `json:"subject,omitempty"`
	SubjectRegexp string `json:"subjectRegexp,omitempty"`
	Issuer        string `json:"issuer,omitempty"`
	IssuerRegexp  string `json:"issuerRegexp,omitempty"`
}

// Check reports whether the identity can be matched: it needs a subject and an issuer, as cosign
// demands, so that "any identity of this issuer" is never trusted by accident.
func (i Identity) Check() error {
	if i.Subject == "" && i.SubjectRegexp == "" {
		return errors.New("a certificate identity needs a subject (--certificate-identity or --certificate-identity-regexp)")
	}
	if i.Issuer == "" && i.IssuerRegexp == "" {
		return errors.New("a certificate identity needs an OIDC issuer (--certificate-oidc-issuer or --certificate-oidc-issuer-regexp)")
	}
	_, err := i.matcher()
	return err
}

func (i Identity) matcher() (verify.CertificateIdentity, error) {
	ci, err := verify.NewShortCertificateIdentity(i.Issuer, i.IssuerRegexp, i.Subject, i.SubjectRegexp)
	if err != nil {
		return verify.CertificateIdentity{}, fmt.Errorf("certificate identity %s: %w", i, err)
	}
	return ci, nil
}

// String is the identity as a user wrote it.
func (i Identity) String() string {
	subject, issuer := quoteOrRegexp(i.Subject, i.SubjectRegexp), quoteOrRegexp(i.Issuer, i.IssuerRegexp)
	return fmt.Sprintf("subject %s, issuer %s", subject, issuer)
}

func quoteOrRegexp(exact, re string) string {
	switch {
	case exact != "" && re != "":
		return fmt.Sprintf("%q and matching /%s/", exact, re)
	case re != "":
		return "matching /" + re + "/"
	}
	return fmt.Sprintf("%q", exact)
}

// Trust is what a verification accepts: signatures by one of Keys, and keyless signatures whose
// certificate chains to Root and names one of Identities.
type Trust struct {
	Keys       []PublicKey
	Identities []Identity
	// Root holds the certificate authorities, transparency logs and timestamp authorities
	// keyless signatures are checked against; nil is the embedded public-good root.
	Root root.TrustedMaterial
}

// IsZero reports whether nothing is trusted: verification is then not asked for.
func (t Trust) IsZero() bool { return len(t.Keys) == 0 && len(t.Identities) == 0 }

// String lists what is trusted, for messages.
func (t Trust) String() string {
	var parts []string
	for _, k := range t.Keys {
		parts = append(parts, "key "+k.String())
	}
	for _, i := range t.Identities {
		parts = append(parts, "identity "+i.String())
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

func (t Trust) root() (root.TrustedMaterial, error) {
	if t.Root != nil {
		return t.Root, nil
	}
	return PublicGoodRoot()
}

// SignedBy names who made a verified signature: a key, or a certificate's identity.
type SignedBy struct {
	Key     *PublicKey `json:"-"`
	Subject string     `json:"subject,omitempty"`
	Issuer  string     `json:"issuer,omitempty"`
	// Certificate holds what a verified certificate says beyond the identity: the source
	// repository, ref and commit, the build's workflow (Fulcio's extensions).
	Certificate *certificate.Summary `json:"-"`
}

// String names the signer.
func (s SignedBy) String() string {
	if s.Key != nil {
		return s.Key.String()
	}
	return fmt.Sprintf("%s (issuer %s)", s.Subject, s.Issuer)
}

// Keyless reports whether a certificate, not a key, made the signature.
func (s SignedBy) Keyless() bool { return s.Key == nil }

// VerifyBundleTrust checks that b signs want and is trusted by t: a bundle with a public key hint
// as VerifyBundle checks it; a bundle with a certificate through sigstore-go against t's root
// (certificate chain, transparency-log entry with its inclusion proof or signed entry timestamp,
// RFC 3161 timestamps, SCTs when the root lists CT logs), then its identity against t.Identities.
// It returns who signed. Signatures over another digest are ErrOtherDigest; untrusted ones
// ErrUntrusted with what did not match.
func VerifyBundleTrust(b *Bundle, t Trust, want digest.Digest) (SignedBy, error) {
	if b.pb.GetVerificationMaterial().GetPublicKey() != nil {
		k, err := VerifyBundle(b, t.Keys, want)
		if err != nil {
			return SignedBy{}, err
		}
		return SignedBy{Key: &k}, nil
	}
	by, predicateType, subjects, err := b.verifyKeyless(t, want)
	if err != nil {
		return SignedBy{}, err
	}
	if subjects != nil && !containsDigest(subjects, want) {
		return SignedBy{}, fmt.Errorf("%w: signed by %s over %s, not %s", ErrOtherDigest, by, subjects[0], want)
	}
	if predicateType != "" && predicateType != CosignSignPredicateType {
		return SignedBy{}, fmt.Errorf("%w: the bundle is a %q attestation, not a cosign signature", ErrMalformed, predicateType)
	}
	return by, nil
}

// verifyKeyless verifies a certificate-signed bundle and its identity. For a DSSE envelope it
// returns the statement's predicate type and subjects, left for the caller to compare; a message
// signature is verified over want itself.
func (b *Bundle) verifyKeyless(t Trust, want digest.Digest) (SignedBy, string, []digest.Digest, error) {
	env := b.pb.GetDsseEnvelope()
	artifact := verify.WithoutArtifactUnsafe()
	if env == nil {
		raw, err := hex.DecodeString(want.Encoded())
		if err != nil {
			return SignedBy{}, "", nil, fmt.Errorf("digest %s: %w", want, err)
		}
		artifact = verify.WithArtifactDigest(want.Algorithm().String(), raw)
	}
	by, err := b.verifyCertificate(t, artifact)
	if err != nil {
		if env == nil && errors.Is(err, ErrUntrusted) && b.pb.GetMessageSignature().GetMessageDigest() != nil {
			if got := hex.EncodeToString(b.pb.GetMessageSignature().GetMessageDigest().GetDigest()); got != want.Encoded() {
				return SignedBy{}, "", nil, fmt.Errorf("%w: the message signature is over %s, not %s", ErrOtherDigest, got, want.Encoded())
			}
		}
		return SignedBy{}, "", nil, err
	}
	if env == nil {
		return by, "", nil, nil
	}
	subjects, predicateType, err := statementSubjects(env.GetPayloadType(), env.GetPayload())
	if err != nil {
		return SignedBy{}, "", nil, err
	}
	return by, predicateType, subjects, nil
}

// verifyCertificate verifies a certificate-signed bundle with sigstore-go against t's root
// (certificate chain, transparency-log entry, timestamps; the signature over artifact), then the
// certificate's identity against t.Identities.
func (b *Bundle) verifyCertificate(t Trust, artifact verify.ArtifactPolicyOption) (SignedBy, error) {
	summary, _ := b.certificateSummary()
	if len(t.Identities) == 0 {
		return SignedBy{}, fmt.Errorf("%w: signed keylessly by %s (issuer %s), and no certificate identity is trusted (--certificate-identity)",
			ErrUntrusted, summary.SubjectAlternativeName, summary.Issuer)
	}
	tm, err := t.root()
	if err != nil {
		return SignedBy{}, err
	}
	sb, err := sgbundle.NewBundle(b.pb)
	if err != nil {
		return SignedBy{}, fmt.Errorf("%w: bundle: %v", ErrMalformed, err)
	}
	opts := []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)}
	if len(tm.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	v, err := verify.NewVerifier(tm, opts...)
	if err != nil {
		return SignedBy{}, fmt.Errorf("verifier: %w", err)
	}
	// identities are matched below, so a mismatch names the identity found and the ones wanted
	res, err := v.Verify(sb, verify.NewPolicy(artifact, verify.WithoutIdentitiesUnsafe()))
	if err != nil {
		return SignedBy{}, fmt.Errorf("%w: keyless signature by %s (issuer %s): %v", ErrUntrusted, summary.SubjectAlternativeName, summary.Issuer, err)
	}
	got := *res.Signature.Certificate
	if err := matchIdentity(t.Identities, got); err != nil {
		return SignedBy{}, err
	}
	return SignedBy{Subject: got.SubjectAlternativeName, Issuer: got.Issuer, Certificate: &got}, nil
}

// matchIdentity checks a verified certificate against the trusted identities; the error names the
// identity the certificate holds and each one wanted.
func matchIdentity(ids []Identity, got certificate.Summary) error {
	var wanted []string
	for _, id := range ids {
		m, err := id.matcher()
		if err != nil {
			return err
		}
		if m.Verify(got) == nil {
			return nil
		}
		wanted = append(wanted, id.String())
	}
	return fmt.Errorf("%w: the certificate names subject %q and issuer %q; trusted: %s",
		ErrIdentityMismatch, got.SubjectAlternativeName, got.Issuer, strings.Join(wanted, " | "))
}

// certificateSummary reads the leaf certificate's identity without verifying it, for messages.
func (b *Bundle) certificateSummary() (certificate.Summary, error) {
	vm := b.pb.GetVerificationMaterial()
	raw := vm.GetCertificate().GetRawBytes()
	if raw == nil && len(vm.GetX509CertificateChain().GetCertificates()) > 0 {
		raw = vm.GetX509CertificateChain().GetCertificates()[0].GetRawBytes()
	}
	cert, err := x509.ParseCertificate(raw)
	if err != nil {
		return certificate.Summary{}, err
	}
	return certificate.SummarizeCertificate(cert)
}

// Statement is a verified in-toto statement: who signed it and what it says.
type Statement struct {
	SignedBy      SignedBy
	PredicateType string
	Subjects      []digest.Digest
	// Predicate is the predicate's JSON.
	Predicate []byte
}

// VerifyAttestation checks an attestation bundle (a DSSE envelope over an in-toto statement) as
// VerifyBundleTrust checks a signature, and returns its statement. want must be one of the
// statement's subjects.
func VerifyAttestation(b *Bundle, t Trust, want digest.Digest) (Statement, error) {
	env := b.pb.GetDsseEnvelope()
	if env == nil {
		return Statement{}, fmt.Errorf("%w: an attestation is a DSSE envelope, not a message signature", ErrMalformed)
	}
	var by SignedBy
	if b.pb.GetVerificationMaterial().GetPublicKey() != nil {
		var other error
		for _, k := range t.Keys {
			subjects, _, err := b.verify(k)
			if err != nil {
				continue
			}
			if !containsDigest(subjects, want) {
				other = fmt.Errorf("%w: attested by %s about %s, not %s", ErrOtherDigest, k, subjects, want)
				continue
			}
			by = SignedBy{Key: &k}
			break
		}
		if by.Key == nil {
			if other != nil {
				return Statement{}, other
			}
			return Statement{}, fmt.Errorf("%w: the attestation verifies with none of the trusted keys", ErrUntrusted)
		}
	} else {
		var subjects []digest.Digest
		var err error
		by, _, subjects, err = b.verifyKeyless(t, want)
		if err != nil {
			return Statement{}, err
		}
		if !containsDigest(subjects, want) {
			return Statement{}, fmt.Errorf("%w: attested by %s about %s, not %s", ErrOtherDigest, by, subjects, want)
		}
	}
	subjects, predicateType, err := statementSubjects(env.GetPayloadType(), env.GetPayload())
	if err != nil {
		return Statement{}, err
	}
	predicate, err := statementPredicate(env.GetPayload())
	if err != nil {
		return Statement{}, err
	}
	return Statement{SignedBy: by, PredicateType: predicateType, Subjects: subjects, Predicate: predicate}, nil
}

// PredicateType is the predicate type of a DSSE bundle's statement, read without verification:
// it selects the referrers worth verifying.
func (b *Bundle) PredicateType() string {
	env := b.pb.GetDsseEnvelope()
	if env == nil {
		return ""
	}
	_, pt, err := statementSubjects(env.GetPayloadType(), env.GetPayload())
	if err != nil {
		return ""
	}
	return pt
}

package signtest

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// Sigstore is an in-memory Sigstore (Fulcio, Rekor, timestamp authority) that makes keyless
// bundles as cosign v3 makes them, and the trusted root that verifies them.
type Sigstore struct {
	vs *ca.VirtualSigstore
}

// NewSigstore starts a virtual Sigstore.
func NewSigstore(t testing.TB) *Sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return &Sigstore{vs: vs}
}

// Root is the trusted material; without CT logs, since the virtual Fulcio embeds no SCTs.
func (s *Sigstore) Root(t testing.TB) *root.TrustedRoot {
	t.Helper()
	// The virtual Rekor's logs carry their ID as hex text where a trusted root holds the raw bytes:
	// as written to trusted_root.json they would name another log.
	logs := map[string]*root.TransparencyLog{}
	for id, l := range s.vs.RekorLogs() {
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		fixed := *l
		fixed.ID = raw
		logs[id] = &fixed
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, s.vs.FulcioCertificateAuthorities(), nil, s.vs.TimestampingAuthorities(), logs)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// RootJSON is Root as a trusted_root.json.
func (s *Sigstore) RootJSON(t testing.TB) []byte {
	t.Helper()
	b, err := s.Root(t).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BundleOptions vary a bundle for the tests of what must be refused.
type BundleOptions struct {
	// NoTimestamp leaves out the RFC 3161 timestamp.
	NoTimestamp bool
	// At is the transparency log's integrated time (default: now).
	At time.Time
}

// Statement makes an in-toto statement of predicateType about subject.
func Statement(t testing.TB, subject digest.Digest, predicateType string, predicate any) []byte {
	t.Helper()
	if predicate == nil {
		predicate = map[string]any{}
	}
	b, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"digest": map[string]string{subject.Algorithm().String(): subject.Encoded()}}},
		"predicateType": predicateType,
		"predicate":     predicate,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Sign makes the bundle `cosign sign` makes keylessly for subject, by identity of issuer.
func (s *Sigstore) Sign(t testing.TB, identity, issuer string, subject digest.Digest, o BundleOptions) []byte {
	t.Helper()
	return s.Attest(t, identity, issuer, Statement(t, subject, sign.CosignSignPredicateType, nil), o)
}

// Attest makes a keyless v0.3 bundle of a DSSE envelope over statement, with a Rekor entry
// carrying an inclusion proof and a signed entry timestamp, and an RFC 3161 timestamp unless
// o.NoTimestamp.
func (s *Sigstore) Attest(t testing.TB, identity, issuer string, statement []byte, o BundleOptions) []byte {
	t.Helper()
	at := o.At
	if at.IsZero() {
		at = time.Now()
	}
	e, err := s.vs.AttestAtTime(identity, issuer, statement, at, true)
	if err != nil {
		t.Fatal(err)
	}
	vc, _ := e.VerificationContent()
	sc, _ := e.SignatureContent()
	env := sc.EnvelopeContent().RawEnvelope()
	tsrs, _ := e.Timestamps()
	entries, _ := e.TlogEntries()
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
		},
	}
	for _, en := range entries {
		tle := en.TransparencyLogEntry()
		// the virtual Rekor logs DSSE entries; NewEntry leaves the kind out of the protobuf form
		tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
		// and the signed entry timestamp, which makes the integrated time a verified time
		set, err := s.vs.RekorSignPayload(tlog.RekorPayload{
			Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody), IntegratedTime: tle.IntegratedTime,
			LogIndex: tle.LogIndex, LogID: hex.EncodeToString(tle.LogId.KeyId),
		})
		if err != nil {
			t.Fatal(err)
		}
		tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
		pb.VerificationMaterial.TlogEntries = append(pb.VerificationMaterial.TlogEntries, tle)
	}
	if !o.NoTimestamp {
		tvd := &protobundle.TimestampVerificationData{}
		for _, ts := range tsrs {
			tvd.Rfc3161Timestamps = append(tvd.Rfc3161Timestamps, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
		}
		pb.VerificationMaterial.TimestampVerificationData = tvd
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		t.Fatal(err)
	}
	de := &protodsse.Envelope{Payload: payload, PayloadType: env.PayloadType}
	for _, sig := range env.Signatures {
		raw, err := base64.StdEncoding.DecodeString(sig.Sig)
		if err != nil {
			t.Fatal(err)
		}
		de.Signatures = append(de.Signatures, &protodsse.Signature{Sig: raw, Keyid: sig.KeyID})
	}
	pb.Content = &protobundle.Bundle_DsseEnvelope{DsseEnvelope: de}
	b, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SignLegacy makes a keyless legacy signature of payload (a simple-signing payload) as cosign
// stores it: the layer annotations with the signature, certificate, Rekor bundle and timestamp.
func (s *Sigstore) SignLegacy(t testing.TB, identity, issuer string, payload []byte) map[string]string {
	t.Helper()
	e, err := s.vs.Sign(identity, issuer, payload)
	if err != nil {
		t.Fatal(err)
	}
	vc, _ := e.VerificationContent()
	sc, _ := e.SignatureContent()
	tsrs, _ := e.Timestamps()
	entries, _ := e.TlogEntries()
	tle := entries[0].TransparencyLogEntry()
	rp := tlog.RekorPayload{
		Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody), IntegratedTime: tle.IntegratedTime,
		LogIndex: tle.LogIndex, LogID: hex.EncodeToString(tle.LogId.KeyId),
	}
	set, err := s.vs.RekorSignPayload(rp)
	if err != nil {
		t.Fatal(err)
	}
	rekorBundle, err := json.Marshal(map[string]any{"SignedEntryTimestamp": set, "Payload": rp})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := json.Marshal(map[string]any{"SignedRFC3161Timestamp": tsrs[0]})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		sign.SignatureAnnotation:   base64.StdEncoding.EncodeToString(sc.MessageSignatureContent().Signature()),
		sign.CertificateAnnotation: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: vc.Certificate().Raw})),
		sign.RekorBundleAnnotation: string(rekorBundle),
		sign.TimestampAnnotation:   string(ts),
	}
}

// GitHubProvenance is an SLSA v1 predicate as GitHub's artifact attestations write it for a
// workflow run of repo at ref.
func GitHubProvenance(repo, ref string) map[string]any {
	return map[string]any{
		"buildDefinition": map[string]any{
			"buildType": "https://actions.github.io/buildtypes/workflow/v1",
			"externalParameters": map[string]any{
				"workflow": map[string]any{"ref": ref, "repository": repo, "path": ".github/workflows/release.yml"},
			},
			"resolvedDependencies": []any{map[string]any{"uri": "git+" + repo + "@" + ref}},
		},
		"runDetails": map[string]any{"builder": map[string]any{"id": "https://github.com/actions/runner/github-hosted"}},
	}
}

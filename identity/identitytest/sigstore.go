// Package identitytest makes keyless signatures for tests: sigstore bundles from sigstore-go's
// virtual Sigstore (Fulcio, Rekor and a timestamp authority in memory), and the trusted root that
// verifies them, as a file `serve --trusted-root` reads.
package identitytest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/krm-catalog/krm-catalog/identity"
)

// Sigstore is a virtual Sigstore.
type Sigstore struct {
	*ca.VirtualSigstore
}

// New returns a fresh virtual Sigstore.
func New(t testing.TB) *Sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatalf("virtual sigstore: %v", err)
	}
	return &Sigstore{vs}
}

// TrustedRoot is the virtual Sigstore's trusted root without CT logs (its certificates carry no
// SCTs), as a trusted_root.json.
func (s *Sigstore) TrustedRoot(t testing.TB) []byte {
	t.Helper()
	// the virtual logs' IDs are hex text, where a trusted root holds the raw bytes
	logs := map[string]*root.TransparencyLog{}
	for id, l := range s.RekorLogs() {
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		c := *l
		c.ID = raw
		logs[id] = &c
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, s.FulcioCertificateAuthorities(), nil, s.TimestampingAuthorities(), logs)
	if err != nil {
		t.Fatalf("trusted root: %v", err)
	}
	data, err := tr.MarshalJSON()
	if err != nil {
		t.Fatalf("trusted root: %v", err)
	}
	return data
}

// TrustedRootFile writes TrustedRoot into a temporary directory and returns its path.
func (s *Sigstore) TrustedRootFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(path, s.TrustedRoot(t), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// SignBlob signs data keylessly as subject, vouched for by issuer, as `cosign sign-blob --bundle`.
func (s *Sigstore) SignBlob(t testing.TB, subject, issuer string, data []byte) []byte {
	t.Helper()
	e, err := s.Sign(subject, issuer, data)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return s.toBundle(t, e)
}

// Statement is an in-toto statement about one sha256 digest.
func Statement(t testing.TB, sha256Hex, predicateType string, predicate any) []byte {
	t.Helper()
	st := map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": "artifact", "digest": map[string]string{"sha256": sha256Hex}}},
		"predicateType": predicateType,
		"predicate":     predicate,
	}
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// SignStatement signs an in-toto statement keylessly into a DSSE bundle, as cosign signs an image
// (predicate https://sigstore.dev/cosign/sign/v1) or attests it.
func (s *Sigstore) SignStatement(t testing.TB, subject, issuer string, statement []byte) []byte {
	t.Helper()
	e, err := s.Attest(subject, issuer, statement)
	if err != nil {
		t.Fatalf("attest: %v", err)
	}
	return s.toBundle(t, e)
}

// toBundle writes a virtual Sigstore's entity as a v0.1 bundle (its tlog entries carry signed
// entry timestamps, not inclusion proofs).
func (s *Sigstore) toBundle(t testing.TB, e *ca.TestEntity) []byte {
	t.Helper()
	vc, err := e.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := e.TlogEntries()
	if err != nil {
		t.Fatal(err)
	}
	tsrs, err := e.Timestamps()
	if err != nil {
		t.Fatal(err)
	}
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle+json;version=0.1",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: &protocommon.X509CertificateChain{
				Certificates: []*protocommon.X509Certificate{{RawBytes: vc.Certificate().Raw}},
			}},
			TimestampVerificationData: &protobundle.TimestampVerificationData{},
		},
	}
	for _, te := range entries {
		// the entry's proto lacks its kind and its signed entry timestamp: both are made again
		tle := proto.Clone(te.TransparencyLogEntry()).(*protorekor.TransparencyLogEntry)
		var kv struct{ Kind, APIVersion string }
		if err := json.Unmarshal(tle.CanonicalizedBody, &kv); err != nil {
			t.Fatal(err)
		}
		tle.KindVersion = &protorekor.KindVersion{Kind: kv.Kind, Version: kv.APIVersion}
		set, err := s.RekorSignPayload(tlog.RekorPayload{
			Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody), IntegratedTime: tle.IntegratedTime,
			LogIndex: tle.LogIndex, LogID: hex.EncodeToString(tle.LogId.KeyId),
		})
		if err != nil {
			t.Fatal(err)
		}
		tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
		pb.VerificationMaterial.TlogEntries = append(pb.VerificationMaterial.TlogEntries, tle)
	}
	for _, tsr := range tsrs {
		pb.VerificationMaterial.TimestampVerificationData.Rfc3161Timestamps = append(pb.VerificationMaterial.TimestampVerificationData.Rfc3161Timestamps, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: tsr})
	}
	sc, err := e.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	switch c := sc.(type) {
	case *bundle.MessageSignature:
		pb.Content = &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: c.Digest()},
			Signature:     c.Signature(),
		}}
	case *bundle.Envelope:
		env := &protodsse.Envelope{Payload: mustDecode(t, c.Payload), PayloadType: c.PayloadType}
		for _, sig := range c.Signatures {
			env.Signatures = append(env.Signatures, &protodsse.Signature{Sig: mustDecode(t, sig.Sig), Keyid: sig.KeyID})
		}
		pb.Content = &protobundle.Bundle_DsseEnvelope{DsseEnvelope: env}
	default:
		t.Fatalf("unknown signature content %T", sc)
	}
	data, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// SHA256 is the hex SHA-256 of data.
func SHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func mustDecode(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Verifier is a keyless verifier that trusts this virtual Sigstore, through its trusted root file
// format.
func (s *Sigstore) Verifier(t testing.TB) *identity.Verifier {
	t.Helper()
	tr, err := root.NewTrustedRootFromJSON(s.TrustedRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	v, err := identity.NewVerifier(tr)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

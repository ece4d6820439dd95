package web

import (
	"net/url"
	"strings"

	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/store"
)

// signerView names who signed a verified version: a registered key by its fingerprint, or the
// certificate identity a registered identity matched.
type signerView struct {
	Kind   string // "key" or "identity"
	Key    string // the fingerprint
	Issuer string
	// Subject is the certificate's subject; SubjectURL links it when it is an https URL (a CI
	// workflow).
	Subject, SubjectURL string
}

func signerOf(s *identity.Signer) *signerView {
	if s == nil || s.IsZero() {
		return nil
	}
	if s.Key != "" {
		return &signerView{Kind: "key", Key: s.Key}
	}
	return &signerView{Kind: "identity", Issuer: s.Issuer, Subject: s.Subject, SubjectURL: httpsURL(s.Subject)}
}

// provenanceView is how a version was built, from a verified SLSA provenance attestation.
type provenanceView struct {
	Builder, BuilderURL string
	Repo, RepoURL       string
	Ref                 string
	Commit, CommitURL   string
	Signer              *signerView
}

func provenanceOf(p *identity.Provenance) *provenanceView {
	if p == nil {
		return nil
	}
	v := &provenanceView{Builder: p.BuilderID, BuilderURL: httpsURL(p.BuilderID), Repo: p.SourceRepo, RepoURL: httpsURL(p.SourceRepo),
		Ref: p.SourceRef, Commit: p.SourceCommit, Signer: signerOf(&p.Signer)}
	// a commit on a forge whose commit pages are REPO/commit/SHA (GitHub, GitLab's redirect)
	if v.RepoURL != "" && p.SourceCommit != "" && strings.Trim(p.SourceCommit, "0123456789abcdef") == "" {
		v.CommitURL = strings.TrimSuffix(v.RepoURL, "/") + "/commit/" + p.SourceCommit
	}
	return v
}

// sbomView is a download link to an SBOM of the version.
type sbomView struct {
	Format, URL string
	Size        int
}

func sbomsOf(group, kind, version string, sboms []identity.SBOM) []sbomView {
	var out []sbomView
	for _, s := range sboms {
		format := "SBOM"
		switch s.ArtifactType {
		case "application/spdx+json":
			format = "SPDX"
		case "application/vnd.cyclonedx+json":
			format = "CycloneDX"
		}
		out = append(out, sbomView{Format: format, Size: int(s.Size),
			URL: "/api/v1/functions/" + url.PathEscape(group) + "/" + url.PathEscape(kind) + "/versions/" + url.PathEscape(version) + "/sboms/" + url.PathEscape(s.Manifest)})
	}
	return out
}

// trustView is what the function page says of a version's supply chain; nil when nothing is known.
type trustView struct {
	SignedBy   *signerView
	Provenance *provenanceView
	SBOMs      []sbomView
}

func trustOf(e store.FunctionVersion) *trustView {
	t := &trustView{Provenance: provenanceOf(e.Provenance), SBOMs: sbomsOf(e.Group, e.Kind, e.Version, e.SBOMs)}
	if e.Signature == "verified" {
		t.SignedBy = signerOf(e.SignedBy)
	}
	if t.SignedBy == nil && t.Provenance == nil && len(t.SBOMs) == 0 {
		return nil
	}
	return t
}

// httpsURL is u when it is an https URL to link to, else "".
func httpsURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "https" || p.Host == "" {
		return ""
	}
	return p.String()
}

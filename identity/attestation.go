package identity

import (
	"encoding/json"
	"fmt"
	"strings"
)

// SLSA provenance predicate types the service reads.
const (
	SLSAProvenanceV1  = "https://slsa.dev/provenance/v1"
	SLSAProvenanceV02 = "https://slsa.dev/provenance/v0.2"
)

// Provenance is what a verified SLSA provenance attestation says of how an artifact was built.
type Provenance struct {
	PredicateType string `json:"predicateType"`
	BuilderID     string `json:"builderId"`
	BuildType     string `json:"buildType,omitempty"`
	// SourceRepo is the repository built from (https://github.com/ORG/REPO), SourceRef the ref and
	// SourceCommit the commit, when the attestation says.
	SourceRepo   string `json:"sourceRepo,omitempty"`
	SourceRef    string `json:"sourceRef,omitempty"`
	SourceCommit string `json:"sourceCommit,omitempty"`
	// Signer signed the attestation: a registered key or identity of the publisher.
	Signer Signer `json:"signer"`
}

// SBOM is a software bill of materials attached to an artifact as an OCI referrer.
type SBOM struct {
	// ArtifactType is application/spdx+json or application/vnd.cyclonedx+json.
	ArtifactType string `json:"artifactType"`
	// Manifest is the referrer's manifest digest; Layer the SBOM document's blob.
	Manifest string `json:"manifest"`
	Layer    string `json:"layer"`
	Size     int64  `json:"size"`
}

// Attestations is what the registry holds about an artifact besides its signatures.
type Attestations struct {
	Provenance *Provenance `json:"provenance,omitempty"`
	SBOMs      []SBOM      `json:"sboms,omitempty"`
}

// IsZero says whether a holds nothing.
func (a Attestations) IsZero() bool { return a.Provenance == nil && len(a.SBOMs) == 0 }

// maxStringLen bounds each string taken from an attestation: it is shown on the website.
const maxStringLen = 512

// ParseProvenance reads the builder and the source of an SLSA provenance predicate (v1, or v0.2
// as older generators write it).
func ParseProvenance(predicateType string, predicate []byte) (Provenance, error) {
	p := Provenance{PredicateType: predicateType}
	switch predicateType {
	case SLSAProvenanceV1:
		var v1 struct {
			BuildDefinition struct {
				BuildType          string `json:"buildType"`
				ExternalParameters struct {
					Workflow struct {
						Repository string `json:"repository"`
						Ref        string `json:"ref"`
					} `json:"workflow"`
				} `json:"externalParameters"`
				ResolvedDependencies []resourceDescriptor `json:"resolvedDependencies"`
			} `json:"buildDefinition"`
			RunDetails struct {
				Builder struct {
					ID string `json:"id"`
				} `json:"builder"`
			} `json:"runDetails"`
		}
		if err := json.Unmarshal(predicate, &v1); err != nil {
			return Provenance{}, fmt.Errorf("read the SLSA v1 provenance: %w", err)
		}
		bd := v1.BuildDefinition
		p.BuilderID, p.BuildType = v1.RunDetails.Builder.ID, bd.BuildType
		p.SourceRepo, p.SourceRef = bd.ExternalParameters.Workflow.Repository, bd.ExternalParameters.Workflow.Ref
		if len(bd.ResolvedDependencies) > 0 {
			repo, ref, commit := bd.ResolvedDependencies[0].source()
			p.SourceCommit = commit
			if p.SourceRepo == "" {
				p.SourceRepo = repo
			}
			if p.SourceRef == "" {
				p.SourceRef = ref
			}
		}
	case SLSAProvenanceV02:
		var v02 struct {
			Builder struct {
				ID string `json:"id"`
			} `json:"builder"`
			BuildType  string `json:"buildType"`
			Invocation struct {
				ConfigSource resourceDescriptor `json:"configSource"`
			} `json:"invocation"`
		}
		if err := json.Unmarshal(predicate, &v02); err != nil {
			return Provenance{}, fmt.Errorf("read the SLSA v0.2 provenance: %w", err)
		}
		p.BuilderID, p.BuildType = v02.Builder.ID, v02.BuildType
		p.SourceRepo, p.SourceRef, p.SourceCommit = v02.Invocation.ConfigSource.source()
	default:
		return Provenance{}, fmt.Errorf("predicate type %q is not SLSA provenance (%s or %s)", predicateType, SLSAProvenanceV1, SLSAProvenanceV02)
	}
	if p.BuilderID == "" {
		return Provenance{}, fmt.Errorf("the provenance names no builder")
	}
	for _, s := range []*string{&p.BuilderID, &p.BuildType, &p.SourceRepo, &p.SourceRef, &p.SourceCommit} {
		if len(*s) > maxStringLen || strings.ContainsAny(*s, "\n\r\x00") {
			return Provenance{}, fmt.Errorf("the provenance holds a value longer than %d bytes or with a control character", maxStringLen)
		}
	}
	return p, nil
}

// resourceDescriptor is the part of an in-toto resource descriptor (or a v0.2 config source) that
// names a source: git+https://github.com/ORG/REPO@refs/tags/v1 with its commit.
type resourceDescriptor struct {
	URI    string            `json:"uri"`
	Digest map[string]string `json:"digest"`
}

func (r resourceDescriptor) source() (repo, ref, commit string) {
	uri := strings.TrimPrefix(r.URI, "git+")
	repo, ref, _ = strings.Cut(uri, "@")
	commit = r.Digest["gitCommit"]
	if commit == "" {
		commit = r.Digest["sha1"]
	}
	return repo, ref, commit
}

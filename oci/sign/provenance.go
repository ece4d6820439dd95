package sign

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The predicate types of SLSA provenance: v1, as `cosign attest --type slsaprovenance1` and
// GitHub's attestations write it, and v0.2, which older builders still write.
const (
	SLSAProvenanceV1  = "https://slsa.dev/provenance/v1"
	SLSAProvenanceV02 = "https://slsa.dev/provenance/v0.2"
)

// ProvenanceTypes are the predicate types read as SLSA provenance.
func ProvenanceTypes() []string { return []string{SLSAProvenanceV1, SLSAProvenanceV02} }

// Provenance is what an SLSA provenance predicate says about a build.
type Provenance struct {
	// Builder is the builder's ID (runDetails.builder.id; builder.id in v0.2).
	Builder string `json:"builder,omitempty"`
	// SourceRepo is the source repository, without "git+" or a ref: https://github.com/o/r.
	SourceRepo string `json:"sourceRepo,omitempty"`
	// SourceRef is the source ref built (refs/tags/v1.0.0), when the provenance names it.
	SourceRef string `json:"sourceRef,omitempty"`
}

// ParseProvenance reads an SLSA provenance predicate. The source comes from the GitHub workflow's
// external parameters when present, else from the first resolved dependency (v1), or from the
// config source (v0.2).
func ParseProvenance(predicateType string, predicate []byte) (Provenance, error) {
	switch predicateType {
	case SLSAProvenanceV1:
		var p struct {
			BuildDefinition struct {
				ExternalParameters struct {
					Workflow struct {
						Repository string `json:"repository"`
						Ref        string `json:"ref"`
					} `json:"workflow"`
				} `json:"externalParameters"`
				ResolvedDependencies []struct {
					URI string `json:"uri"`
				} `json:"resolvedDependencies"`
			} `json:"buildDefinition"`
			RunDetails struct {
				Builder struct {
					ID string `json:"id"`
				} `json:"builder"`
			} `json:"runDetails"`
		}
		if err := json.Unmarshal(predicate, &p); err != nil {
			return Provenance{}, fmt.Errorf("%w: SLSA provenance v1: %v", ErrMalformed, err)
		}
		out := Provenance{Builder: p.RunDetails.Builder.ID}
		if wf := p.BuildDefinition.ExternalParameters.Workflow; wf.Repository != "" {
			out.SourceRepo, out.SourceRef = normalizeRepo(wf.Repository), wf.Ref
		} else if deps := p.BuildDefinition.ResolvedDependencies; len(deps) > 0 {
			out.SourceRepo, out.SourceRef = splitSource(deps[0].URI)
		}
		return out, nil
	case SLSAProvenanceV02:
		var p struct {
			Builder struct {
				ID string `json:"id"`
			} `json:"builder"`
			Invocation struct {
				ConfigSource struct {
					URI string `json:"uri"`
				} `json:"configSource"`
			} `json:"invocation"`
		}
		if err := json.Unmarshal(predicate, &p); err != nil {
			return Provenance{}, fmt.Errorf("%w: SLSA provenance v0.2: %v", ErrMalformed, err)
		}
		repo, ref := splitSource(p.Invocation.ConfigSource.URI)
		return Provenance{Builder: p.Builder.ID, SourceRepo: repo, SourceRef: ref}, nil
	}
	return Provenance{}, fmt.Errorf("%w: predicate type %q is not SLSA provenance", ErrMalformed, predicateType)
}

// splitSource splits a source URI as SLSA writes it, git+https://github.com/o/r@refs/tags/v1.
func splitSource(uri string) (repo, ref string) {
	uri = strings.TrimPrefix(uri, "git+")
	if i := strings.LastIndex(uri, "@"); i > strings.Index(uri, "://")+2 && i >= 0 {
		uri, ref = uri[:i], uri[i+1:]
	}
	return normalizeRepo(uri), ref
}

func normalizeRepo(repo string) string {
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(repo, "git+"), "/"), ".git")
}

// ProvenancePolicy is what provenance must say; an empty field is not checked.
type ProvenancePolicy struct {
	Builder    string
	SourceRepo string
	SourceRef  string
}

// Check compares provenance with the policy; the error names each field that differs, with what
// the provenance says and what was wanted.
func (p ProvenancePolicy) Check(got Provenance) error {
	var diffs []string
	check := func(field, want, have string) {
		if want != "" && want != have {
			diffs = append(diffs, fmt.Sprintf("%s is %q, want %q", field, have, want))
		}
	}
	check("builder", p.Builder, got.Builder)
	check("source repository", normalizeRepo(p.SourceRepo), got.SourceRepo)
	check("source ref", p.SourceRef, got.SourceRef)
	if len(diffs) > 0 {
		return fmt.Errorf("%w: %s", ErrProvenanceMismatch, strings.Join(diffs, "; "))
	}
	return nil
}

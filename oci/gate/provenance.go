package gate

import (
	"context"
	"fmt"
	"strings"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// checkProvenance checks the SLSA provenance of the artifact a check resolved, when provenance is
// required or the catalog entry states a source repository (then a failure is a warning): an
// attestation signed by a trusted key or identity, about the artifact's digest, whose builder,
// source repository and ref are what the options and the entry want.
func (g *Gate) checkProvenance(ctx context.Context, c *Check, entry *catalog.Provenance) {
	trust := g.opts.trust()
	wantRepo := ""
	if entry != nil {
		wantRepo = entry.SourceRepository
	}
	if trust.IsZero() || (!g.opts.RequireProvenance && wantRepo == "") || c.Findings.HasErrors() || c.Skipped != "" {
		return
	}
	sev := catalog.SeverityWarning
	if g.opts.RequireProvenance {
		sev = catalog.SeverityError
	}
	ref, err := oci.ParseReference(c.Reference)
	if err != nil || c.Digest == "" {
		c.add(sev, c.Pointer, "%s is not an OCI artifact, so it carries no provenance attestation", c.Reference)
		return
	}
	pinned := ref.Name() + "@" + c.Digest
	_, atts, err := g.client.Attestations(ctx, pinned, trust, sign.ProvenanceTypes()...)
	if err != nil {
		c.add(catalog.SeverityError, c.Pointer, "checking provenance: %v", err)
		return
	}
	if len(atts) == 0 {
		c.add(sev, c.Pointer, "%s has no SLSA provenance attestation (a referrer of type %s with predicate %s)", pinned, sign.BundleMediaType, strings.Join(sign.ProvenanceTypes(), " or "))
		return
	}
	policies := []sign.ProvenancePolicy{g.opts.Provenance}
	if wantRepo != "" {
		policies = append(policies, sign.ProvenancePolicy{SourceRepo: wantRepo})
	}
	var problems []string
	for _, a := range atts {
		if !a.Verified {
			problems = append(problems, fmt.Sprintf("%s: %s", a.Manifest, a.Problem))
			continue
		}
		p, err := sign.ParseProvenance(a.PredicateType, a.Statement.Predicate)
		if err == nil {
			for _, pol := range policies {
				if err = pol.Check(p); err != nil {
					break
				}
			}
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s (signed by %s): %v", a.Manifest, a.SignedBy, err))
			continue
		}
		c.Provenance = fmt.Sprintf("built from %s %s by %s, attested by %s", p.SourceRepo, p.SourceRef, p.Builder, a.SignedBy)
		return
	}
	c.add(sev, c.Pointer, "%s: no provenance attestation is acceptable: %s", pinned, strings.Join(problems, "; "))
}

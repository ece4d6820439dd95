package web

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/store"
)

// fakeTrust annotates every version as verified by signer, with provenance and SBOMs.
type fakeTrust struct {
	signer     identity.Signer
	provenance *identity.Provenance
	sboms      []identity.SBOM
}

func (f fakeTrust) AnnotateFunctionVersions(_ context.Context, fvs []store.FunctionVersion) {
	for i := range fvs {
		s := f.signer
		fvs[i].Signature, fvs[i].SignedBy, fvs[i].Provenance, fvs[i].SBOMs = "verified", &s, f.provenance, f.sboms
	}
}

func (f fakeTrust) AnnotateCatalogVersions(_ context.Context, vs []store.CatalogVersion) {
	for i := range vs {
		s := f.signer
		vs[i].Signature, vs[i].SignedBy = "verified", &s
	}
}

func TestSupplyChainPanel(t *testing.T) {
	t.Parallel()
	fp := strings.Repeat("0f", 32)
	withIdentity := newFakeStore(t)
	withIdentity.ids = []store.Identity{{Publisher: "example.com", Pattern: identity.Pattern{Issuer: "https://token.actions.githubusercontent.com",
		Subject: "https://github.com/acme/fns/.github/workflows/release.yml@refs/tags/*"}, CreatedAt: published}}
	idSite := newSite(t, Config{Store: withIdentity})
	byKey := newSite(t, Config{Store: newFakeStore(t), Signatures: fakeTrust{signer: identity.Signer{Key: fp}}})
	full := newSite(t, Config{Store: newFakeStore(t), Signatures: fakeTrust{
		signer: identity.Signer{Issuer: "https://token.actions.githubusercontent.com", Subject: "https://github.com/acme/fns/.github/workflows/release.yml@refs/tags/v1"},
		provenance: &identity.Provenance{BuilderID: "https://github.com/actions/runner/github-hosted", SourceRepo: "https://github.com/acme/fns",
			SourceRef: "refs/tags/v1", SourceCommit: "abc123", Signer: identity.Signer{Issuer: "https://token.actions.githubusercontent.com", Subject: "https://github.com/acme/fns/.github/workflows/release.yml@refs/tags/v1"}},
		sboms: []identity.SBOM{{ArtifactType: "application/vnd.cyclonedx+json", Manifest: "sha256:" + strings.Repeat("cd", 32), Size: 2048}},
	}})
	oddSource := newSite(t, Config{Store: newFakeStore(t), Signatures: fakeTrust{
		signer:     identity.Signer{Issuer: "https://accounts.example", Subject: "alice@example.com"},
		provenance: &identity.Provenance{BuilderID: "javascript:alert(1)", SourceRepo: "javascript:alert(2)", SourceCommit: "not-a-hex-commit"},
	}})
	for _, tc := range []struct {
		name          string
		site          http.Handler
		path          string
		want, notWant []string
	}{
		{"a key", byKey, "/functions/fn.example.com/SetNamespace",
			[]string{`id="trust-title"`, `data-signed-by="key"`, "key <code class=\"hash\" title=\"" + fp + "\">"}, []string{"data-provenance-source", "data-sbom"}},
		{"identity, provenance, SBOM", full, "/functions/fn.example.com/SetNamespace",
			[]string{`data-signed-by="identity"`, `href="https://github.com/acme/fns/.github/workflows/release.yml@refs/tags/v1"`,
				`<a href="https://github.com/acme/fns" rel="noopener noreferrer">github.com/acme/fns</a> <code>refs/tags/v1</code> at commit <a href="https://github.com/acme/fns/commit/abc123"`,
				`data-provenance-builder`, `href="/api/v1/functions/fn.example.com/SetNamespace/versions/v1/sboms/sha256:cdcd`, `data-sbom="CycloneDX"`, "2.0 KiB"}, nil},
		{"no link but https", oddSource, "/functions/fn.example.com/SetNamespace",
			[]string{"alice@example.com", "not-a-hex-commit"}, []string{`href="javascript`, "/commit/"}},
		{"publisher's identities", idSite, "/publishers/example.com", []string{"Keyless identities", "release.yml@refs/tags/*", "issuer token.actions.githubusercontent.com"},
			[]string{"none of its artifacts can show as verified"}},
		{"catalog signer", full, "/catalogs/example-functions", []string{`data-signed-by="identity"`, "release.yml@refs/tags/v1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkPage(t, tc.site, tc.path, tc.want, tc.notWant)
		})
	}
}

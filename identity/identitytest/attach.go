package identitytest

import (
	"bytes"
	"context"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// AttachBundle stores a sigstore bundle as an OCI 1.1 referrer of pinned (repository@sha256:...)
// in a registry on this machine, as cosign v3 stores its signatures (predicate type
// https://sigstore.dev/cosign/sign/v1) and attestations, with the annotations cosign writes. It
// returns the referrer's manifest digest.
func AttachBundle(t testing.TB, pinned string, bundle []byte, predicateType string) digest.Digest {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(pinned)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	// registries commonly refuse deletes; the stale referrers index is garbage their GC removes
	repo.SkipReferrersGC = true
	subject, err := repo.Resolve(ctx, repo.Reference.Reference)
	if err != nil {
		t.Fatal(err)
	}
	const bundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	layer := content.NewDescriptorFromBytes(bundleMediaType, bundle)
	if err := repo.Push(ctx, layer, bytes.NewReader(bundle)); err != nil {
		t.Fatal(err)
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, bundleMediaType, oras.PackManifestOptions{
		Subject: &subject, Layers: []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{"dev.sigstore.bundle.content": "dsse-envelope", "dev.sigstore.bundle.predicateType": predicateType},
	})
	if err != nil {
		t.Fatal(err)
	}
	return desc.Digest
}

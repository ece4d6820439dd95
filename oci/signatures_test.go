package oci_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

func pushCatalog(t *testing.T, c *oci.Client, ref, content string) digest.Digest {
	t.Helper()
	res, err := c.Push(context.Background(), ref, oci.PushOptions{Kind: oci.KindCatalog, Files: []oci.File{{Data: []byte(content), Title: "catalog.yaml"}}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Descriptor.Digest
}

func repoOf(t *testing.T, ref string) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(ref)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	return repo
}

// editManifest fetches the manifest from names in repoRef, lets edit change it (nil: no change),
// and pushes it under the tag to, or by digest when to is "": what someone who can write the
// repository, but holds no key, can do.
func editManifest(t *testing.T, repoRef, from, to string, edit func(*ocispec.Manifest)) {
	t.Helper()
	ctx := context.Background()
	repo := repoOf(t, repoRef)
	_, rc, err := repo.FetchReference(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.NewDecoder(rc).Decode(&m); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if edit != nil {
		edit(&m)
	}
	raw, _ := json.Marshal(m)
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	desc.ArtifactType = m.ArtifactType
	if to == "" {
		err = repo.Push(ctx, desc, bytes.NewReader(raw))
	} else {
		err = repo.PushReference(ctx, desc, bytes.NewReader(raw), to)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// moveSignature copies the legacy signature manifest of from to the signature tag of to.
func moveSignature(t *testing.T, repoRef string, from, to digest.Digest) {
	editManifest(t, repoRef, sign.LegacyTag(from), sign.LegacyTag(to), nil)
}

// corruptSignature flips one bit of each legacy signature of d.
func corruptSignature(t *testing.T, repoRef string, d digest.Digest) {
	editManifest(t, repoRef, sign.LegacyTag(d), sign.LegacyTag(d), func(m *ocispec.Manifest) {
		for i := range m.Layers {
			s := []byte(m.Layers[i].Annotations[sign.SignatureAnnotation])
			s[10] ^= 0x02 // still base64, another signature
			m.Layers[i].Annotations = map[string]string{sign.SignatureAnnotation: string(s)}
		}
	})
}

func TestLegacySignatures(t *testing.T) {
	t.Parallel()
	signer, trusted := keyPair(t, "trusted.pub")
	_, stranger := keyPair(t, "stranger.pub")
	for _, reg := range registrytest.Both(t) {
		t.Run(reg.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := newClient(t)
			repo := reg.Host + "/signed"
			signed := pushCatalog(t, c, repo+":signed", catalogYAML)
			pushCatalog(t, c, repo+":unsigned", catalogYAML+"# another\n")
			moved := pushCatalog(t, c, repo+":moved", catalogYAML+"# a third\n")
			corrupt := pushCatalog(t, c, repo+":corrupt", catalogYAML+"# a fourth\n")
			for _, tag := range []string{"signed", "corrupt"} {
				if _, err := c.Sign(ctx, repo+":"+tag, signer, oci.SignOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// Signing twice keeps one signature: the payload and signature are the same layer.
			if _, err := c.Sign(ctx, repo+":signed", signer, oci.SignOptions{}); err != nil {
				t.Fatal(err)
			}
			moveSignature(t, repo, signed, moved)
			corruptSignature(t, repo, corrupt)

			tests := []struct {
				name   string
				ref    string
				keys   []sign.PublicKey
				want   error
				status oci.SignatureStatus
			}{
				{"signed, trusted key", repo + "@" + signed.String(), []sign.PublicKey{trusted}, nil, oci.StatusVerified},
				{"signed, by tag", repo + ":signed", []sign.PublicKey{stranger, trusted}, nil, oci.StatusVerified},
				{"wrong key", repo + ":signed", []sign.PublicKey{stranger}, oci.ErrUntrustedSignature, oci.StatusSigned},
				{"missing signature", repo + ":unsigned", []sign.PublicKey{trusted}, oci.ErrNoSignature, oci.StatusUnsigned},
				{"signature over another digest", repo + ":moved", []sign.PublicKey{trusted}, oci.ErrSignatureForOtherDigest, oci.StatusSigned},
				{"corrupted signature", repo + ":corrupt", []sign.PublicKey{trusted}, oci.ErrUntrustedSignature, oci.StatusSigned},
			}
			for _, tc := range tests {
				sig, err := c.VerifySignatures(ctx, tc.ref, tc.keys)
				if !errors.Is(err, tc.want) {
					t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
				}
				if tc.want == nil && (!sig.Verified || sig.Format != oci.FormatLegacy || !strings.Contains(sig.Key, "trusted.pub")) {
					t.Errorf("%s: signature %+v", tc.name, sig)
				}
				if tc.want != nil {
					t.Logf("%s: %v", tc.name, err)
				}
				status, err := c.SignatureStatus(ctx, tc.ref, tc.keys)
				if err != nil || status != tc.status {
					t.Errorf("%s: status %s (%v), want %s", tc.name, status, err, tc.status)
				}
			}
			_, sigs, err := c.Signatures(ctx, repo+":signed", nil)
			if err != nil || len(sigs) != 1 {
				t.Errorf("signatures after signing twice: %d (%v), want 1", len(sigs), err)
			}
		})
	}
}

// moveBundle re-attaches the bundle referrer bundleRef (a manifest digest) to the artifact to:
// the same signed bundle, now claiming to be about another artifact.
func moveBundle(t *testing.T, repoRef string, bundleRef, to digest.Digest) {
	t.Helper()
	toDesc, err := repoOf(t, repoRef).Resolve(context.Background(), to.String())
	if err != nil {
		t.Fatal(err)
	}
	editManifest(t, repoRef, bundleRef.String(), "", func(m *ocispec.Manifest) {
		m.Subject = &ocispec.Descriptor{MediaType: toDesc.MediaType, Digest: toDesc.Digest, Size: toDesc.Size}
	})
}

func TestBundleSignatures(t *testing.T) {
	t.Parallel()
	signer, trusted := keyPair(t, "trusted.pub")
	_, stranger := keyPair(t, "stranger.pub")
	for _, reg := range registrytest.Both(t) {
		t.Run(reg.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := newClient(t)
			repo := reg.Host + "/bundles"
			pushCatalog(t, c, repo+":signed", catalogYAML)
			moved := pushCatalog(t, c, repo+":moved", catalogYAML+"# another\n")
			sig, err := c.Sign(ctx, repo+":signed", signer, oci.SignOptions{Format: oci.FormatBundle})
			if err != nil {
				t.Fatal(err)
			}
			moveBundle(t, repo, sig.Manifest, moved)

			tests := []struct {
				name string
				ref  string
				keys []sign.PublicKey
				want error
			}{
				{"trusted key", repo + ":signed", []sign.PublicKey{stranger, trusted}, nil},
				{"wrong key", repo + ":signed", []sign.PublicKey{stranger}, oci.ErrUntrustedSignature},
				{"bundle moved to another artifact", repo + ":moved", []sign.PublicKey{trusted}, oci.ErrSignatureForOtherDigest},
			}
			for _, tc := range tests {
				got, err := c.VerifySignatures(ctx, tc.ref, tc.keys)
				if !errors.Is(err, tc.want) {
					t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
					continue
				}
				if tc.want == nil && (got.Format != oci.FormatBundle || got.Manifest != sig.Manifest) {
					t.Errorf("%s: verified %+v, want the bundle %s", tc.name, got, sig.Manifest)
				}
			}
			// Both formats side by side are both listed.
			if _, err := c.Sign(ctx, repo+":signed", signer, oci.SignOptions{}); err != nil {
				t.Fatal(err)
			}
			_, sigs, err := c.Signatures(ctx, repo+":signed", []sign.PublicKey{trusted})
			if err != nil {
				t.Fatal(err)
			}
			var formats []string
			for _, s := range sigs {
				if !s.Verified {
					t.Errorf("%s signature %s not verified: %s", s.Format, s.Manifest, s.Problem)
				}
				formats = append(formats, s.Format)
			}
			if diff := cmp.Diff([]string{oci.FormatLegacy, oci.FormatBundle}, formats); diff != "" {
				t.Errorf("signature formats (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTamperedSignaturePayloadIsRefused(t *testing.T) {
	t.Parallel()
	signer, trusted := keyPair(t, "trusted.pub")
	reg := registrytest.Distribution(t)
	ctx := context.Background()
	c := newClient(t)
	ref := reg.Host + "/sigtamper:v1"
	pushCatalog(t, c, ref, catalogYAML)
	if _, err := c.Sign(ctx, ref, signer, oci.SignOptions{}); err != nil {
		t.Fatal(err)
	}
	// Blobs (the payload) are altered in transit: the signature is not even considered.
	proxy := registrytest.Tamper(t, reg, "/blobs/")
	_, err := newClient(t).VerifySignatures(ctx, proxy+"/sigtamper:v1", []sign.PublicKey{trusted})
	if !errors.Is(err, oci.ErrUntrustedSignature) || !strings.Contains(err.Error(), "digest mismatch") {
		t.Errorf("err = %v, want an untrusted signature because of a digest mismatch", err)
	}
}

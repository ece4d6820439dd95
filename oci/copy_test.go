package oci_test

import (
	"context"
	"testing"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// TestCopyTakesReferrersAndSignatures copies an artifact with an attached definition and signatures
// in both formats between the two registries, each way (referrers API or its tag schema on either
// side): at the destination the definition is there and both signatures verify; a second copy
// sends nothing.
func TestCopyTakesReferrersAndSignatures(t *testing.T) {
	t.Parallel()
	signer, trusted := keyPair(t, "trusted.pub")
	regs := registrytest.Both(t)
	for _, pair := range [][2]*registrytest.Registry{{regs[0], regs[1]}, {regs[1], regs[0]}} {
		src, dst := pair[0], pair[1]
		t.Run(src.Name+" to "+dst.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := newClient(t)
			from := src.Host + "/copy/" + dst.Name + ":v1"
			d := pushCatalog(t, c, from, catalogYAML)
			if _, err := c.Attach(ctx, src.Host+"/copy/"+dst.Name+"@"+d.String(), oci.File{Data: []byte(definitionYAML), Title: "definition.yaml"}, oci.AttachOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{oci.FormatLegacy, oci.FormatBundle} {
				if _, err := c.Sign(ctx, from, signer, oci.SignOptions{Format: f}); err != nil {
					t.Fatal(err)
				}
			}
			to := dst.Host + "/mirror/copy:v1"
			res, err := c.Copy(ctx, from, to)
			if err != nil {
				t.Fatal(err)
			}
			if res.Copied == 0 || !res.LegacySignature || res.Referrers < 2 {
				t.Errorf("copy: %+v, want content sent, the legacy signature and two referrers", res)
			}
			disc, err := c.Discover(ctx, to, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(disc.Definitions) != 1 || disc.Reference.Digest != d || res.Descriptor.Digest != d {
				t.Errorf("discover at the destination: %+v", disc)
			}
			_, sigs, err := c.Signatures(ctx, to, nil)
			if err != nil {
				t.Fatal(err)
			}
			verified := map[string]bool{}
			_, vs, err := c.Signatures(ctx, to, []sign.PublicKey{trusted})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range vs {
				verified[s.Format] = s.Verified
			}
			if len(sigs) != 2 || !verified[oci.FormatLegacy] || !verified[oci.FormatBundle] {
				t.Errorf("signatures at the destination: %+v", vs)
			}
			again, err := c.Copy(ctx, from, to)
			if err != nil || again.Copied != 0 || again.Present == 0 {
				t.Errorf("second copy: %+v, %v; want nothing sent", again, err)
			}
		})
	}
}

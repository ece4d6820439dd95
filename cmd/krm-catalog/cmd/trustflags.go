package cmd

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// trustFlags are the flags that say whose signatures a command trusts: cosign public keys, and a
// keyless identity (a certificate's subject and OIDC issuer) checked against a trusted root. Every
// command that takes --key takes them all, through register.
type trustFlags struct {
	keys                     []string
	identity, identityRegexp string
	issuer, issuerRegexp     string
	trustedRoot              string
}

// register adds the flags; keyUsage is the --key help, which says what must be signed.
func (f *trustFlags) register(fs *pflag.FlagSet, keyUsage string) {
	fs.StringArrayVar(&f.keys, "key", nil, keyUsage)
	fs.StringVar(&f.identity, "certificate-identity", "", "trust keyless signatures whose certificate names this identity (an e-mail address, or a CI workflow URI); with --certificate-oidc-issuer")
	fs.StringVar(&f.identityRegexp, "certificate-identity-regexp", "", "trust keyless signatures whose certificate identity matches this regular expression; with --certificate-oidc-issuer")
	fs.StringVar(&f.issuer, "certificate-oidc-issuer", "", "the OIDC issuer a keyless signature's certificate must name (e.g. https://token.actions.githubusercontent.com)")
	fs.StringVar(&f.issuerRegexp, "certificate-oidc-issuer-regexp", "", "a regular expression the OIDC issuer of a keyless signature's certificate must match")
	fs.StringVar(&f.trustedRoot, "trusted-root", "", "trusted_root.json verifying keyless signatures (Fulcio, Rekor, timestamp authorities), as cosign takes it (default: the Sigstore public-good root built in)")
}

// identityGiven reports whether a keyless identity flag was given.
func (f *trustFlags) identityGiven() bool {
	return f.identity != "" || f.identityRegexp != "" || f.issuer != "" || f.issuerRegexp != ""
}

// load reads the keys and the trusted root; the zero Trust when no flag was given. The root is
// read only when an identity is trusted: commands that check keys alone never parse it.
func (f *trustFlags) load() (sign.Trust, error) {
	keys, err := loadKeys(f.keys)
	if err != nil {
		return sign.Trust{}, err
	}
	t := sign.Trust{Keys: keys}
	if !f.identityGiven() {
		if f.trustedRoot != "" {
			return sign.Trust{}, usageErr(fmt.Errorf("--trusted-root needs --certificate-identity[-regexp] and --certificate-oidc-issuer[-regexp]: it verifies keyless signatures"))
		}
		return t, nil
	}
	id := sign.Identity{Subject: f.identity, SubjectRegexp: f.identityRegexp, Issuer: f.issuer, IssuerRegexp: f.issuerRegexp}
	if err := id.Check(); err != nil {
		return sign.Trust{}, usageErr(err)
	}
	t.Identities = []sign.Identity{id}
	tr, err := sign.LoadTrustedRoot(f.trustedRoot)
	if err != nil {
		return sign.Trust{}, usageErr(err)
	}
	t.Root = tr
	return t, nil
}

package sign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"
)

// The environment a keyless signer reads its identity token from: a token given as is (cosign's
// variable), or GitHub Actions' token request (a workflow with `permissions: id-token: write`).
const (
	IDTokenEnv             = "SIGSTORE_ID_TOKEN"
	ActionsTokenURLEnv     = "ACTIONS_ID_TOKEN_REQUEST_URL"
	ActionsTokenRequestEnv = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
)

// maxTokenResponse bounds the answer of GitHub's token endpoint: a JWT of a few KB.
const maxTokenResponse = 64 << 10

// IdentityToken finds the OIDC token a keyless signature is made with: explicit when given, else
// $SIGSTORE_ID_TOKEN, else one requested from GitHub Actions for the audience "sigstore".
func IdentityToken(ctx context.Context, hc *http.Client, explicit string, getenv func(string) string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if tok := getenv(IDTokenEnv); tok != "" {
		return tok, nil
	}
	reqURL, reqToken := getenv(ActionsTokenURLEnv), getenv(ActionsTokenRequestEnv)
	if reqURL == "" || reqToken == "" {
		return "", fmt.Errorf("no identity token: give --identity-token, set %s, or run in GitHub Actions with `permissions: id-token: write` (%s and %s)",
			IDTokenEnv, ActionsTokenURLEnv, ActionsTokenRequestEnv)
	}
	u, err := url.Parse(reqURL)
	if err != nil {
		return "", fmt.Errorf("identity token: %s: %w", ActionsTokenURLEnv, err)
	}
	q := u.Query()
	q.Set("audience", "sigstore")
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("identity token: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+reqToken)
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("identity token from GitHub Actions: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return "", fmt.Errorf("identity token from GitHub Actions: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("identity token from GitHub Actions: %s", resp.Status)
	}
	var v struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Value == "" {
		return "", fmt.Errorf("identity token from GitHub Actions: no token in the answer (%v)", err)
	}
	return v.Value, nil
}

// KeylessOptions say where a keyless signature is made.
type KeylessOptions struct {
	FulcioURL string
	RekorURL  string
	// RekorVersion is the Rekor API's major version, 1 or 2 (0: 1).
	RekorVersion uint32
	// TimestampURL, when given, adds an RFC 3161 timestamp from that authority.
	TimestampURL string
	IDToken      string
	// Transport carries the requests to Fulcio and the timestamp authority (nil: the default).
	Transport http.RoundTripper
}

// KeylessFromSigningConfig reads a signing_config.json (as cosign and sigstore-go take it) and
// picks the Fulcio, Rekor and timestamp authority valid at now.
func KeylessFromSigningConfig(path string, now time.Time) (KeylessOptions, error) {
	sc, err := root.NewSigningConfigFromPath(path)
	if err != nil {
		return KeylessOptions{}, fmt.Errorf("signing config %s: %w", path, err)
	}
	fulcio, err := root.SelectService(sc.FulcioCertificateAuthorityURLs(), sgsign.FulcioAPIVersions, now)
	if err != nil {
		return KeylessOptions{}, fmt.Errorf("signing config %s: Fulcio: %w", path, err)
	}
	rekor, err := root.SelectService(sc.RekorLogURLs(), sgsign.RekorAPIVersions, now)
	if err != nil {
		return KeylessOptions{}, fmt.Errorf("signing config %s: Rekor: %w", path, err)
	}
	o := KeylessOptions{FulcioURL: fulcio.URL, RekorURL: rekor.URL, RekorVersion: rekor.MajorAPIVersion}
	if tsa, err := root.SelectService(sc.TimestampAuthorityURLs(), sgsign.TimestampAuthorityAPIVersions, now); err == nil {
		o.TimestampURL = tsa.URL
	}
	return o, nil
}

// SignKeyless makes the bundle `cosign sign` makes keylessly for d: an ephemeral key, a Fulcio
// certificate for the identity token, the cosign signing statement about d in a DSSE envelope,
// logged in Rekor (and timestamped when a timestamp authority is given).
func SignKeyless(ctx context.Context, d digest.Digest, o KeylessOptions) ([]byte, error) {
	if o.FulcioURL == "" || o.RekorURL == "" {
		return nil, errors.New("keyless signing needs a Fulcio and a Rekor (--fulcio-url and --rekor-url, or --signing-config)")
	}
	if o.IDToken == "" {
		return nil, errors.New("keyless signing needs an identity token")
	}
	statement, err := cosignStatement(d)
	if err != nil {
		return nil, fmt.Errorf("sign keylessly: %w", err)
	}
	kp, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		return nil, fmt.Errorf("sign keylessly: %w", err)
	}
	rekorVersion := o.RekorVersion
	if rekorVersion == 0 {
		rekorVersion = 1
	}
	opts := sgsign.BundleOptions{
		Context:                    ctx,
		CertificateProvider:        sgsign.NewFulcio(&sgsign.FulcioOptions{BaseURL: o.FulcioURL, Transport: o.Transport}),
		CertificateProviderOptions: &sgsign.CertificateProviderOptions{IDToken: o.IDToken},
		TransparencyLogs:           []sgsign.Transparency{sgsign.NewRekor(&sgsign.RekorOptions{BaseURL: o.RekorURL, Version: rekorVersion})},
	}
	if o.TimestampURL != "" {
		opts.TimestampAuthorities = []*sgsign.TimestampAuthority{sgsign.NewTimestampAuthority(&sgsign.TimestampAuthorityOptions{URL: o.TimestampURL, Transport: o.Transport})}
	}
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: statement, PayloadType: InTotoPayloadType}, kp, opts)
	if err != nil {
		return nil, fmt.Errorf("sign keylessly: %w", err)
	}
	b, err := protojson.Marshal(pb)
	if err != nil {
		return nil, fmt.Errorf("sign keylessly: %w", err)
	}
	return b, nil
}

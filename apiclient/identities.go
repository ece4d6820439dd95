package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/krm-catalog/krm-catalog/identity"
)

// Identity is a publisher's registered keyless identity, as the API describes it.
type Identity = identity.Identity

// Identities are a publisher's active identities and the removed ones.
type Identities struct {
	Identities []Identity `json:"identities"`
	Removed    []Identity `json:"removed"`
}

func identitiesPath(publisher string) string {
	return "/api/v1/publishers/" + url.PathEscape(publisher) + "/identities"
}

// IdentityChallenge asks the service for a challenge to sign keylessly as an identity of
// publisher, and checks that it is one for publisher. Sign its Payload (never bytes the service
// sent) as a blob, as `cosign sign-blob --bundle` does.
func (c *Client) IdentityChallenge(ctx context.Context, publisher string) (identity.Challenge, error) {
	var ch identity.Challenge
	if err := c.do(ctx, http.MethodPost, identitiesPath(publisher)+"/challenges", "", nil, &ch); err != nil {
		return identity.Challenge{}, fmt.Errorf("request a challenge: %w", err)
	}
	if err := ch.Check(publisher); err != nil {
		return identity.Challenge{}, fmt.Errorf("request a challenge: %w", err)
	}
	return ch, nil
}

// RegisterIdentity posts a keyless proof: the identity pattern, the challenge's nonce and the
// bundle over its payload. It returns the identity and whether it is new.
func (c *Client) RegisterIdentity(ctx context.Context, publisher string, proof identity.KeylessProof) (Identity, bool, error) {
	body, err := json.Marshal(proof)
	if err != nil {
		return Identity{}, false, err
	}
	var out struct {
		Created  bool     `json:"created"`
		Identity Identity `json:"identity"`
	}
	if err := c.do(ctx, http.MethodPut, identitiesPath(publisher), "application/json", body, &out); err != nil {
		return Identity{}, false, fmt.Errorf("register the identity: %w", err)
	}
	return out.Identity, out.Created, nil
}

// AddIdentity registers pattern for publisher in one go: a challenge, signed by signBlob (a
// keyless signer returning a sigstore bundle), posted as proof.
func (c *Client) AddIdentity(ctx context.Context, publisher string, pattern identity.Pattern, signBlob func(ctx context.Context, payload []byte) ([]byte, error)) (Identity, bool, error) {
	ch, err := c.IdentityChallenge(ctx, publisher)
	if err != nil {
		return Identity{}, false, err
	}
	b, err := signBlob(ctx, ch.Payload())
	if err != nil {
		return Identity{}, false, fmt.Errorf("sign the challenge keylessly: %w", err)
	}
	return c.RegisterIdentity(ctx, publisher, identity.KeylessProof{Pattern: pattern, Nonce: ch.Nonce, Bundle: b})
}

// ListIdentities returns publisher's active and removed identities.
func (c *Client) ListIdentities(ctx context.Context, publisher string) (Identities, error) {
	var out Identities
	err := c.do(ctx, http.MethodGet, identitiesPath(publisher), "", nil, &out)
	return out, err
}

// DeleteIdentity removes one of publisher's identities.
func (c *Client) DeleteIdentity(ctx context.Context, publisher string, p identity.Pattern) error {
	q := url.Values{"issuer": {p.Issuer}, "subject": {p.Subject}}
	return c.do(ctx, http.MethodDelete, identitiesPath(publisher)+"?"+q.Encode(), "", nil, nil)
}

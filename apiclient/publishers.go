package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// Key is a publisher's registered key, as the API describes it.
type Key = identity.Key

// Keys are a publisher's active keys and the removed ones.
type Keys struct {
	Keys    []Key `json:"keys"`
	Removed []Key `json:"removed"`
}

func keysPath(publisher string) string {
	return "/api/v1/publishers/" + url.PathEscape(publisher) + "/keys"
}

// AddKey registers signer's public key for publisher with proof of possession: it asks the service
// for a challenge, checks that the challenge is one for publisher, signs the payload it builds
// from the challenge's fields (never bytes the service sent), and posts the proof. It returns the
// key and whether it is new.
func (c *Client) AddKey(ctx context.Context, publisher string, signer *sign.Signer) (Key, bool, error) {
	var ch identity.Challenge
	if err := c.do(ctx, http.MethodPost, keysPath(publisher)+"/challenges", "", nil, &ch); err != nil {
		return Key{}, false, fmt.Errorf("request a challenge: %w", err)
	}
	proof, err := identity.Answer(ch, publisher, signer)
	if err != nil {
		return Key{}, false, fmt.Errorf("answer the challenge: %w", err)
	}
	body, err := json.Marshal(proof)
	if err != nil {
		return Key{}, false, err
	}
	var out struct {
		Created bool `json:"created"`
		Key     Key  `json:"key"`
	}
	if err := c.do(ctx, http.MethodPut, keysPath(publisher), "application/json", body, &out); err != nil {
		return Key{}, false, fmt.Errorf("register the key: %w", err)
	}
	return out.Key, out.Created, nil
}

// ListKeys returns publisher's active and removed keys.
func (c *Client) ListKeys(ctx context.Context, publisher string) (Keys, error) {
	var out Keys
	err := c.do(ctx, http.MethodGet, keysPath(publisher), "", nil, &out)
	return out, err
}

package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Proposal is an entry a function's publisher proposes for a catalog, as the API describes it.
type Proposal struct {
	ID             int64      `json:"id"`
	Catalog        string     `json:"catalog"`
	Proposer       string     `json:"proposer"`
	Group          string     `json:"group"`
	Kind           string     `json:"kind"`
	Versions       []string   `json:"versions"`
	Digest         string     `json:"digest"`
	Status         string     `json:"status"`
	CreatedAt      time.Time  `json:"createdAt"`
	Reason         string     `json:"reason,omitempty"`
	ClosedBy       string     `json:"closedBy,omitempty"`
	ClosedAt       *time.Time `json:"closedAt,omitempty"`
	CatalogVersion string     `json:"catalogVersion,omitempty"`
	Definition     string     `json:"definition,omitempty"`
}

func proposalsPath(catalogName string) string {
	return "/api/v1/catalogs/" + url.PathEscape(catalogName) + "/proposals"
}

// Propose posts a KRMFunctionDefinition as a proposed entry of a catalog. Sending the same
// definition again returns the open proposal, so a retry makes no second one.
func (c *Client) Propose(ctx context.Context, catalogName string, definition []byte) (Proposal, error) {
	var out Proposal
	err := c.do(ctx, http.MethodPost, proposalsPath(catalogName), "application/yaml", definition, &out)
	return out, err
}

// Proposals lists a catalog's open proposals.
func (c *Client) Proposals(ctx context.Context, catalogName string) ([]Proposal, error) {
	var out struct {
		Proposals []Proposal `json:"proposals"`
	}
	err := c.do(ctx, http.MethodGet, proposalsPath(catalogName), "", nil, &out)
	return out.Proposals, err
}

// Approve publishes version of the catalog with the proposal's entry. Approving again as the
// same version answers as a republish of the same bytes does.
func (c *Client) Approve(ctx context.Context, catalogName string, id int64, version string) (Published, error) {
	var out Published
	path := proposalsPath(catalogName) + "/" + strconv.FormatInt(id, 10) + "/approve?version=" + url.QueryEscape(version)
	err := c.do(ctx, http.MethodPost, path, "", nil, &out)
	return out, err
}

// Reject closes a proposal with a reason.
func (c *Client) Reject(ctx context.Context, catalogName string, id int64, reason string) (Proposal, error) {
	body, err := json.Marshal(map[string]string{"reason": reason})
	if err != nil {
		return Proposal{}, err
	}
	var out Proposal
	err = c.do(ctx, http.MethodPost, proposalsPath(catalogName)+"/"+strconv.FormatInt(id, 10)+"/reject", "application/json", body, &out)
	return out, err
}

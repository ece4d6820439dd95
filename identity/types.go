package identity

import (
	"fmt"
	"time"
)

// Key is a public key a publisher registered, with proof that it holds the private half. A removed
// key stays, as history, with RemovedAt set. The store keeps it; the API and its client carry it.
type Key struct {
	Publisher     string     `json:"publisher"`
	Fingerprint   string     `json:"fingerprint"`
	PEM           string     `json:"pem"`
	CreatedAt     time.Time  `json:"createdAt"`
	ProvenAt      *time.Time `json:"provenAt,omitempty"`
	RemovedAt     *time.Time `json:"removedAt,omitempty"`
	RemovedReason string     `json:"removedReason,omitempty"`
}

// How a publisher owns a group.
const (
	OwnedByName  = "name"  // the group is the publisher's name or under it
	OwnedByGrant = "grant" // an admin granted the group, or one above it
)

// GroupOwner says who owns a group, and why.
type GroupOwner struct {
	Group string `json:"group"`
	// Owner is the owning publisher; "" when nobody owns the group.
	Owner string `json:"owner,omitempty"`
	// Via is OwnedByName or OwnedByGrant.
	Via string `json:"via,omitempty"`
	// Through is the group whose grant or publisher name decides: the group or one above it.
	Through   string     `json:"through,omitempty"`
	GrantedAt *time.Time `json:"grantedAt,omitempty"`
}

// How says in words why the owner owns the group: "by its name", "by grant", or "by a grant of
// GROUP" for a grant of a group above.
func (o GroupOwner) How() string {
	if o.Via == OwnedByGrant {
		if o.Through == o.Group {
			return "by grant"
		}
		return fmt.Sprintf("by a grant of %s", o.Through)
	}
	return "by its name"
}

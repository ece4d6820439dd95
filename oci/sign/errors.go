package sign

import (
	"errors"
	"fmt"
)

// Verification outcomes; package oci exports the same values.
var (
	// ErrUntrusted: the signature does not verify with any trusted key.
	ErrUntrusted = errors.New("no signature by a trusted key")
	// ErrOtherDigest: the signature verifies, but it signs another digest.
	ErrOtherDigest = errors.New("signature is for another digest")
	// ErrMalformed: the signature or its payload cannot be parsed.
	ErrMalformed = errors.New("malformed signature")
	// ErrIdentityMismatch: a keyless signature verifies, but its certificate names an identity
	// that is not trusted. It is an ErrUntrusted.
	ErrIdentityMismatch = fmt.Errorf("%w: certificate identity not trusted", ErrUntrusted)
	// ErrProvenanceMismatch: a verified provenance attestation says something else than the
	// policy wants (builder, source repository, ref).
	ErrProvenanceMismatch = errors.New("provenance does not match")
)

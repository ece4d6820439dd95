package oci

import (
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// Domain conditions callers test for with errors.Is.
var (
	// ErrDigestMismatch: content does not hash to the digest that names it.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrUnsupportedMediaType: the artifact is not one of krm-catalog's kinds.
	ErrUnsupportedMediaType = errors.New("unsupported media type")
	// ErrNoPlatform: an exec artifact has no binary for the requested platform.
	ErrNoPlatform = errors.New("no binary for the platform")
	// ErrUnsafeTitle: a layer title would write outside the output directory.
	ErrUnsafeTitle = errors.New("unsafe file title")
	// ErrTooLarge: an artifact is larger than a pull may write.
	ErrTooLarge = errors.New("artifact too large")
	// ErrInvalidReference: a reference that names no repository, or is malformed.
	ErrInvalidReference = errors.New("invalid reference")
	// ErrNotFound: the registry has no such manifest or blob.
	ErrNotFound = errors.New("not found")
	// ErrNoSignature: no signature of either format exists for the digest.
	ErrNoSignature = errors.New("no signature")
	// ErrUntrustedSignature: signatures exist, but none verifies with a trusted key.
	ErrUntrustedSignature = sign.ErrUntrusted
	// ErrSignatureForOtherDigest: a signature verifies with a trusted key but signs another digest,
	// as when a signature is copied from one artifact to another.
	ErrSignatureForOtherDigest = sign.ErrOtherDigest
	// ErrNotCached: an offline lookup found nothing in the cache.
	ErrNotCached = errors.New("not in the cache")
)

// DigestMismatchError names the digest content was expected to have and the one it has.
type DigestMismatchError struct {
	What     string // what was read: "blob", "manifest"
	Expected digest.Digest
	Received digest.Digest
	// Size mismatch, when that is what went wrong (Received is then empty).
	ExpectedSize, ReceivedSize int64
}

func (e *DigestMismatchError) Error() string {
	switch {
	case e.Received == "" && e.ReceivedSize > e.ExpectedSize:
		return fmt.Sprintf("%s %s: %v: expected %d bytes, received more", e.What, e.Expected, ErrDigestMismatch, e.ExpectedSize)
	case e.Received == "":
		return fmt.Sprintf("%s %s: %v: expected %d bytes, received %d", e.What, e.Expected, ErrDigestMismatch, e.ExpectedSize, e.ReceivedSize)
	}
	return fmt.Sprintf("%s: %v: expected %s, received %s", e.What, ErrDigestMismatch, e.Expected, e.Received)
}

// Is makes errors.Is(err, ErrDigestMismatch) true.
func (e *DigestMismatchError) Is(target error) bool { return target == ErrDigestMismatch }

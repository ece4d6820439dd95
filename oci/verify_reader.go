package oci

import (
	"io"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// verifyingReader passes content through while hashing it, and turns the end of the stream into a
// DigestMismatchError when the bytes are not the ones desc names: the consumer sees the error
// before it can treat what it wrote as complete. It also stops at one byte past desc.Size, so a
// registry cannot make us read without bound.
//
// oras-go's content.VerifyReader does the same check but reports only "mismatched digest"; the
// error here names both digests, which is what a user needs to tell tampering from a stale tag.
type verifyingReader struct {
	r        io.Reader
	desc     ocispec.Descriptor
	what     string
	digester digest.Digester
	n        int64
	err      error // sticky: the first verification failure
}

func newVerifyingReader(r io.Reader, desc ocispec.Descriptor, what string) *verifyingReader {
	return &verifyingReader{r: r, desc: desc, what: what, digester: desc.Digest.Algorithm().Digester()}
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if rest := v.desc.Size + 1 - v.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := v.r.Read(p)
	v.n += int64(n)
	v.digester.Hash().Write(p[:n])
	if v.n > v.desc.Size {
		v.err = &DigestMismatchError{What: v.what, Expected: v.desc.Digest, ExpectedSize: v.desc.Size, ReceivedSize: v.n}
		return 0, v.err
	}
	if err == io.EOF {
		if v.n != v.desc.Size {
			v.err = &DigestMismatchError{What: v.what, Expected: v.desc.Digest, ExpectedSize: v.desc.Size, ReceivedSize: v.n}
			return n, v.err
		}
		if got := v.digester.Digest(); got != v.desc.Digest {
			v.err = &DigestMismatchError{What: v.what, Expected: v.desc.Digest, Received: got}
			return n, v.err
		}
	}
	return n, err
}

// failure is the verification failure, if any: a DigestMismatchError once the reader saw too many
// bytes, too few, or the wrong ones; nil while the bytes read so far may still be the right ones.
func (v *verifyingReader) failure() error { return v.err }

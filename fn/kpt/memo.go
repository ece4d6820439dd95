package kpt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/krm-catalog/krm-catalog/internal/atomicfile"
)

// MemoMessage says why a render ran nothing.
const MemoMessage = "the package is what the last render with these functions wrote, and every step is idempotent: nothing ran (--no-skip renders it)"

// memo remembers, per package directory and pipeline, the digest of the package as the last render
// wrote it back (fn.Package.Digest). A render whose package has that digest is a no-op: see
// docs/skip.md, "Rendering an unchanged package".
type memo struct {
	file string
}

// memoVersion changes whenever what the key or the digest covers changes, so that an entry
// written by another build's rule is never read as this one's.
const memoVersion = "krm-catalog render memo v1"

// newMemo is the memo of a render of the package at dir (its root, links resolved) whose steps,
// in render order, have pins (runner.Checked.Pin), under the cache directory root; nil when a step
// has no pin (not a pinned, idempotent catalog function) or root is "".
func newMemo(root, dir string, pins []string, attribution bool) *memo {
	if root == "" {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d:%s\x00attribution=%t\x00", memoVersion, len(abs), abs, attribution)
	for _, p := range pins {
		if p == "" {
			return nil
		}
		fmt.Fprintf(h, "%s\x00", p)
	}
	key := hex.EncodeToString(h.Sum(nil))
	return &memo{file: filepath.Join(root, key[:2], key)}
}

// remembered is the digest the last render wrote; "" when there is none or it cannot be read.
func (m *memo) remembered() string {
	b, err := os.ReadFile(m.file)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// remember records digest. The file is replaced atomically: concurrent renders leave one of the
// two digests, each of which some render wrote.
func (m *memo) remember(digest string) error {
	if err := os.MkdirAll(filepath.Dir(m.file), 0o755); err != nil {
		return fmt.Errorf("remember the render: %w", err)
	}
	if err := atomicfile.WriteFile(m.file, []byte(digest+"\n"), 0o644); err != nil {
		return fmt.Errorf("remember the render: %w", err)
	}
	return nil
}

package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/go-chi/chi/v5"
)

//go:embed static
var staticFS embed.FS

// asset is one static file, under a name that carries a hash of its content: a changed file gets a
// new URL, so browsers may keep every URL forever.
type asset struct {
	body        []byte
	contentType string
}

type assets struct {
	byURL  map[string]asset  // fingerprinted file name → content
	byName map[string]string // source name → URL path
}

func newAssets() (*assets, error) {
	a := &assets{byURL: map[string]asset{}, byName: map[string]string{}}
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		name := path.Base(p)
		ext := path.Ext(name)
		sum := sha256.Sum256(body)
		hashed := strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:6]) + ext
		ct := mime.TypeByExtension(ext)
		if ct == "" {
			return fmt.Errorf("asset %s: no content type for %q", name, ext)
		}
		a.byURL[hashed] = asset{body: body, contentType: ct}
		a.byName[name] = "/static/" + hashed
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load assets: %w", err)
	}
	return a, nil
}

// url returns the fingerprinted path of a static file; templates call it as {{asset "site.css"}}.
func (a *assets) url(name string) (string, error) {
	u, ok := a.byName[name]
	if !ok {
		return "", fmt.Errorf("no static asset %q", name)
	}
	return u, nil
}

func (a *assets) serve(w http.ResponseWriter, r *http.Request) {
	f, ok := a.byURL[chi.URLParam(r, "file")]
	if !ok {
		// an old fingerprint, or a guess: nothing to cache
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "no such file", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	_, _ = w.Write(f.body)
}

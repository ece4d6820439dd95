package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/store"
)

//go:embed templates
var templateFS embed.FS

// pageNames are the templates in templates/ that are pages; each is parsed with layout.html.
var pageNames = []string{"home", "function", "catalogs", "catalog", "publisher", "error"}

type pages struct {
	byName map[string]*template.Template
}

func parsePages(a *assets) (*pages, error) {
	funcs := template.FuncMap{
		"asset":         a.url,
		"shortHash":     shortHash,
		"breakableURL":  breakableURL,
		"date":          func(t time.Time) string { return t.UTC().Format("2 Jan 2006") },
		"datetime":      func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"size":          func(n int) string { return humanize.IBytes(uint64(max(n, 0))) },
		"plural":        plural,
		"pluralAtLeast": pluralAtLeast,
		"join":          strings.Join,
		"add": func(ns ...int) int {
			sum := 0
			for _, n := range ns {
				sum += n
			}
			return sum
		},
		// a link's text without the scheme, which says nothing to people
		"displayURL": func(u string) string { return strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://") },
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("parse templates: %w", err)
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse templates: %w", err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// page is what the layout needs around every page's content.
type page struct {
	Title string
	// Section marks the navigation link of the current section: "functions" or "catalogs".
	Section string
	// Search fills the search box in the header; the home page has its own.
	Search string
	// NoHeaderSearch hides the header's search box on the page that has a bigger one.
	NoHeaderSearch bool
	Body           any
}

// render executes a page into memory, so that a failure becomes an error page rather than half a
// page, and so that the ETag covers exactly the bytes sent.
func (s *Site) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) error {
	var buf bytes.Buffer
	if err := s.pages.byName[name].ExecuteTemplate(&buf, "layout.html", p); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// pages that point back at the service write the scheme X-Forwarded-Proto names (baseURL), so
	// a shared cache must not serve one scheme's page for the other's
	h.Add("Vary", "X-Forwarded-Proto")
	if status != http.StatusOK {
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_, _ = w.Write(buf.Bytes())
		return nil
	}
	sum := sha256.Sum256(buf.Bytes())
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	// no-cache: a browser keeps the page but asks each time; a 304 costs no body.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", etag)
	if httpx.ETagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	_, _ = w.Write(buf.Bytes())
	return nil
}

// securityHeaders sets the headers every page and asset carries. The policy allows nothing from
// another origin, no inline script or style, and no framing.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// badRequest is a request the visitor must change (400).
type badRequest struct{ message string }

func (e *badRequest) Error() string { return e.message }

// handlerFunc is a page handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// errorPage is the body of the error template.
type errorPage struct {
	Status    int
	Heading   string
	Message   string
	RequestID string
}

// handle adapts a handlerFunc: the one place that turns errors into error pages.
func (s *Site) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		e := errorPage{Status: http.StatusInternalServerError, Heading: "Something went wrong",
			Message: "The server could not show this page. Try again in a moment."}
		var (
			bad     *badRequest
			tooMany *httpx.TooManyRequests
		)
		switch {
		case errors.As(err, &tooMany):
			e.Status, e.Heading, e.Message = http.StatusTooManyRequests, "Too many requests", "This address asked for more pages than the catalog serves at once. Wait a moment, then reload."
			w.Header().Set("Retry-After", strconv.Itoa(int(max(1, (tooMany.RetryAfter+time.Second-1)/time.Second))))
		case errors.As(err, &bad):
			e.Status, e.Heading, e.Message = http.StatusBadRequest, "This request cannot be answered", bad.message
		case errors.Is(err, store.ErrBadPageToken):
			e.Status, e.Heading, e.Message = http.StatusBadRequest, "This page link has expired", "The link to this page of results belongs to another search. Start the search again from its first page."
		case errors.Is(err, store.ErrNotFound):
			e.Status, e.Heading, e.Message = http.StatusNotFound, "Page not found", sentence(err.Error())
		case errors.Is(err, context.Canceled):
			return // the visitor left; nobody reads an answer
		case store.IsUnavailable(err):
			// an outage, not a bug: 503 as the API answers, logged by the API's coalesced lines
			// rather than once per page
			e.Status, e.Heading, e.Message = http.StatusServiceUnavailable, "The catalog is unavailable", "Its database cannot answer right now. Try again in a moment."
			w.Header().Set("Retry-After", "2")
			s.logger.DebugContext(r.Context(), "page unavailable", slog.String("path", r.URL.Path), slog.Any("error", err))
		default:
			// the ID ties what the visitor reports to the log line
			e.RequestID = httpx.RequestID(r.Context())
			s.logger.ErrorContext(r.Context(), "page failed", slog.String("path", r.URL.Path), slog.String("request_id", e.RequestID), slog.Any("error", err))
		}
		if err := s.render(w, r, e.Status, "error", page{Title: e.Heading, NoHeaderSearch: true, Body: e}); err != nil {
			s.logger.ErrorContext(r.Context(), "error page failed", slog.Any("error", err))
			http.Error(w, e.Message, e.Status)
		}
	}
}

func (s *Site) notFound(http.ResponseWriter, *http.Request) error {
	return store.Errorf(store.ErrNotFound, "There is no page at this address.")
}

// sentence capitalises a store message for a page: "no function x" → "No function x."
func sentence(msg string) string {
	if msg == "" {
		return msg
	}
	msg = strings.ToUpper(msg[:1]) + msg[1:]
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

// breakableURL writes a URL with a break opportunity (<wbr>) after each '/', '?', '&' and before
// each '.', so that a narrow column wraps it between its parts, not inside a word; CSS breaks
// anywhere only a part that is wider than the column.
func breakableURL(u string) template.HTML {
	var b strings.Builder
	for _, r := range u {
		if r == '.' {
			b.WriteString("<wbr>")
		}
		b.WriteString(template.HTMLEscapeString(string(r)))
		if r == '/' || r == '?' || r == '&' {
			b.WriteString("<wbr>")
		}
	}
	return template.HTML(b.String())
}

// shortHash shortens "sha256:<hex>" for display; the full digest stays in the title attribute.
func shortHash(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok {
		algo, hex = "", d
	}
	if len(hex) > 12 {
		hex = hex[:12] + "…"
	}
	if algo == "" {
		return hex
	}
	return algo + ":" + hex
}

// pluralAtLeast writes plural(n, one, many), or "1,000+ functions" when more than n are counted.
func pluralAtLeast(n int, more bool, one, many string) string {
	if !more {
		return plural(n, one, many)
	}
	return humanize.Comma(int64(n)) + "+ " + many
}

// plural writes "1 function" or "3 functions".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

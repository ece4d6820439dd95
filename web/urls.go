package web

import (
	"net/http"
	"net/url"
)

// The site's addresses. Names come from published documents: each is escaped as a path segment.

func functionURL(group, kind string) string {
	return "/functions/" + url.PathEscape(group) + "/" + url.PathEscape(kind)
}

func catalogURL(name string) string { return "/catalogs/" + url.PathEscape(name) }

func publisherURL(name string) string { return "/publishers/" + url.PathEscape(name) }

// baseURL is the server's address as the visitor reached it, for the snippets that point back at
// it. The scheme is https when the connection is TLS, or when a proxy in front says so with
// X-Forwarded-Proto (docs/web.md): a visitor who forges the header only changes their own page.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	host := r.Host
	if !validHost(host) {
		host = "localhost"
	}
	return scheme + "://" + host
}

// validHost accepts a host[:port] made of the characters a DNS name, an IPv4 or a bracketed IPv6
// address with a port can have; anything else is not echoed into snippets.
func validHost(h string) bool {
	if h == "" || len(h) > 261 {
		return false
	}
	for _, c := range []byte(h) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

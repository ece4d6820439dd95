// Package httpx holds the HTTP semantics the API and the website both need: If-None-Match
// comparison, Accept negotiation with q-values, the middleware both run behind (request IDs, HEAD
// answered by GET routes, a status-recording writer), and the per-client limiter both enforce.
package httpx

import (
	"strconv"
	"strings"
)

// ETagMatches implements If-None-Match's weak comparison (RFC 9110 §13.1.2): header lists
// entity tags, or is "*".
func ETagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, candidate := range strings.Split(header, ",") {
		candidate = strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if candidate == "*" || candidate == etag {
			return true
		}
	}
	return false
}

// Quality is the q-value an Accept header gives mediaType (RFC 9110 §12.5.1): that of the most
// specific range that matches it (type/subtype over type/* over */*), 1 when that range names
// none, and 0 when no range matches. An empty header accepts everything (1).
func Quality(accept, mediaType string) float64 {
	if strings.TrimSpace(accept) == "" {
		return 1
	}
	typ, _, _ := strings.Cut(mediaType, "/")
	best, bestSpecificity := 0.0, -1
	for _, part := range strings.Split(accept, ",") {
		rng, params, _ := strings.Cut(part, ";")
		rng = strings.ToLower(strings.TrimSpace(rng))
		specificity := -1
		switch {
		case rng == mediaType:
			specificity = 2
		case rng == typ+"/*":
			specificity = 1
		case rng == "*/*":
			specificity = 0
		}
		if specificity <= bestSpecificity {
			continue
		}
		best, bestSpecificity = qValue(params), specificity
	}
	return best
}

// qValue reads q from a media range's parameters; a missing or malformed q is 1.
func qValue(params string) float64 {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || strings.ToLower(strings.TrimSpace(k)) != "q" {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || q < 0 || q > 1 {
			return 1
		}
		return q
	}
	return 1
}

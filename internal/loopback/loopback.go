// Package loopback tells whether a host is this machine, where plain HTTP is the norm (a registry
// or catalog server started for a test or a local mirror) and cannot be intercepted in transit.
package loopback

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Is reports whether host, or host:port, is localhost or a loopback address.
func Is(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Secure reports whether a URL may carry a catalog: https anywhere, or plain http to this machine.
func Secure(u *url.URL) bool {
	return u.Scheme == "https" || u.Scheme == "http" && Is(u.Host)
}

// CheckRedirect refuses, before it is followed, a redirect to a URL that Secure refuses, then
// applies next (or net/http's default limit of 10 redirects when next is nil).
func CheckRedirect(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if !Secure(req.URL) {
			return fmt.Errorf("redirected to %s, which is neither https nor this machine", req.URL)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

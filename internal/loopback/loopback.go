// Package loopback tells whether a host is this machine, where plain HTTP is the norm (a registry
// or catalog server started for a test or a local mirror) and cannot be intercepted in transit.
package loopback

import (
	"net"
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

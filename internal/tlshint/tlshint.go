// Package tlshint adds to an error of a server's certificate the way to trust it: a bare x509
// error does not say that the system's roots can be replaced for one command.
package tlshint

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// Hint is what Wrap appends.
const Hint = "the server's certificate is not trusted here: if it comes from a certificate authority of your own, set SSL_CERT_FILE to a PEM file of it"

// Wrap returns err with Hint when it is a certificate verification error, else err unchanged.
func Wrap(err error) error {
	var (
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		verify   *tls.CertificateVerificationError
	)
	if errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &hostname) || errors.As(err, &verify) {
		return fmt.Errorf("%w (%s)", err, Hint)
	}
	return err
}

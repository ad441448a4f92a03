package nexusexternal

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// ErrUntrusted wraps a TLS answer whose certificate the worker does not
// trust: it fails the same way at every try, so it is not retried.
var ErrUntrusted = errors.New("nexus external API: certificate not trusted")

// untrusted names a certificate verification failure for an operator;
// other errors are returned as they are.
func untrusted(err error) error {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
	)
	if errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &hostname) {
		return fmt.Errorf("%w: %v: give the worker the CA that signed the rack's external API certificate (--nexus-external-ca, a PEM bundle), "+
			"or fix the certificate's name", ErrUntrusted, err)
	}
	return err
}

// HTTPClient is base (nil: http.DefaultClient) trusting, when caFile is
// set, only the certificates in that PEM bundle, as an operator's rack
// with a certificate of a private CA needs.
func HTTPClient(base *http.Client, caFile string) (*http.Client, error) {
	if base == nil {
		base = http.DefaultClient
	}
	if caFile == "" {
		return base, nil
	}
	pool, err := LoadCA(caFile)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	c := *base
	c.Transport = tr
	return &c, nil
}

// LoadCA reads a PEM bundle of CA certificates.
func LoadCA(caFile string) (*x509.CertPool, error) {
	raw, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("nexus external CA %s: %w", caFile, errors.Unwrap(err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		return nil, fmt.Errorf("nexus external CA %s holds no PEM certificate", caFile)
	}
	return pool, nil
}

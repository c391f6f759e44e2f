package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// A TLS file (--tls-ca, --tls-cert, --tls-key, --client-ca) that cannot
// be read or holds no certificate or key is a usage error, exit code 2,
// as an unreadable --token-file or --cluster-secret-file is.

// loadPool reads a PEM bundle of CA certificates.
func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// clientTLS builds the client's TLS configuration from the global flags;
// nil (plaintext) when none of them is set.
func (a *app) clientTLS() (*tls.Config, error) {
	if a.tlsCA == "" && a.tlsCert == "" && !a.insecureSkip {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: a.insecureSkip} //nolint:gosec // the user asked for it
	if a.tlsCA != "" {
		pool, err := loadPool(a.tlsCA)
		if err != nil {
			return nil, usageErrorf("--tls-ca: %w", err)
		}
		conf.RootCAs = pool
	}
	if a.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(a.tlsCert, a.tlsKey)
		if err != nil {
			return nil, usageErrorf("--tls-cert/--tls-key: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}

// serverTLS builds the server's TLS configuration: its certificate from
// --tls-cert/--tls-key and, with clientCA, mutual TLS. Nil (plaintext)
// without a certificate.
func (a *app) serverTLS(clientCA string) (*tls.Config, error) {
	if a.tlsCert == "" {
		if clientCA != "" {
			return nil, usageErrorf("--client-ca needs --tls-cert and --tls-key: mutual TLS is TLS first")
		}
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(a.tlsCert, a.tlsKey)
	if err != nil {
		return nil, usageErrorf("--tls-cert/--tls-key: %w", err)
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if clientCA != "" {
		pool, err := loadPool(clientCA)
		if err != nil {
			return nil, usageErrorf("--client-ca: %w", err)
		}
		conf.ClientCAs = pool
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return conf, nil
}

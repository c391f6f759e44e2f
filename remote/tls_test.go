package remote_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// testCA is a throwaway certificate authority.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var serial int64

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "equeue test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue makes a leaf certificate for 127.0.0.1 (server) or a client.
func (ca *testCA) issue(t *testing.T, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestTLS_ServerCertificate(t *testing.T) {
	ctx := ctxT(t)
	ca := newCA(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", &remote.ServerOptions{TLS: &tls.Config{
		Certificates: []tls.Certificate{ca.issue(t, "server", x509.ExtKeyUsageServerAuth)}, MinVersion: tls.VersionTLS12}})

	c := dial(t, s.addr, &remote.ClientOptions{TLS: &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12}})
	_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("over tls")}}})
	require.NoError(t, err)
	res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t"})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "over tls", string(res.Messages[0].Body))
	// Pipelined sends (AppendStream) go over TLS too.
	sent, err := newProducer(t, c).SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("async")}).Result(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), sent.Offset)

	// A plaintext client cannot talk to a TLS server.
	plain := dial(t, s.addr, nil)
	_, err = plain.Route(ctx, "t")
	assert.ErrorIs(t, err, remote.ErrUnavailable)
	// Nor can a client that does not trust the server's CA.
	other := dial(t, s.addr, &remote.ClientOptions{TLS: &tls.Config{RootCAs: newCA(t).pool, MinVersion: tls.VersionTLS12}})
	_, err = other.Route(ctx, "t")
	assert.ErrorIs(t, err, remote.ErrUnavailable)
}

func TestTLS_Mutual(t *testing.T) {
	ctx := ctxT(t)
	ca := newCA(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", &remote.ServerOptions{TLS: &tls.Config{
		Certificates: []tls.Certificate{ca.issue(t, "server", x509.ExtKeyUsageServerAuth)},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: ca.pool, MinVersion: tls.VersionTLS13}})

	good := dial(t, s.addr, &remote.ClientOptions{TLS: &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{ca.issue(t, "worker", x509.ExtKeyUsageClientAuth)}}})
	r, err := good.Route(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, 1, r.Queues)

	// Without a client certificate, or with one from another CA, calls fail.
	noCert := dial(t, s.addr, &remote.ClientOptions{TLS: &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS13}})
	_, err = noCert.Route(ctx, "t")
	assert.Error(t, err)
	stranger := dial(t, s.addr, &remote.ClientOptions{TLS: &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{newCA(t).issue(t, "stranger", x509.ExtKeyUsageClientAuth)}}})
	_, err = stranger.Route(ctx, "t")
	assert.Error(t, err)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(0), info.Queues[0].MaxOffset)
}

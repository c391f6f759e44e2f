package remote_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log"
	"math/big"
	"net"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
// A real deployment loads its certificate and key from PEM files
// (tls.LoadX509KeyPair) and gives clients the CA's certificate.
func selfSigned() (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "equeue broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		log.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// A broker serves an engine over TLS and admits two tokens: "app" may
// produce and consume, "ops" may do everything. Clients dial with the CA
// that signed the server's certificate and their token; equeue.NewProducer
// and equeue.NewConsumer take the client as they take an engine.
func ExampleNewServer() {
	ctx := context.Background()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close() // after the server stopped: deferred calls run last-in first-out

	cert, pool := selfSigned()
	srv, err := remote.NewServer(eng, &remote.ServerOptions{
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13},
		Tokens: map[string]remote.Rights{
			"app": remote.RightProduce | remote.RightConsume,
			"ops": remote.RightAll,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() { srv.GracefulStop(); <-served }()

	dial := func(token string) *remote.Client {
		c, err := remote.Dial(lis.Addr().String(), &remote.ClientOptions{
			TLS:         &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13},
			Token:       token,
			DialTimeout: 10 * time.Second,
		})
		if err != nil {
			log.Fatal(err)
		}
		return c
	}
	ops, app := dial("ops"), dial("app")
	defer ops.Close()
	defer app.Close()

	if err := ops.CreateTopic(ctx, "orders", 2); err != nil {
		log.Fatal(err)
	}
	p, _ := equeue.NewProducer(app, nil)
	defer p.Close()
	res, err := p.Send(ctx, &equeue.Message{Topic: "orders", Keys: []string{"customer-42"}, Body: []byte("hello over TLS")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored at offset", res.Offset)

	// The app token has no admin right: the call is refused and changes nothing.
	err = app.DeleteTopic(ctx, "orders")
	fmt.Println("app deletes a topic:", errors.Is(err, remote.ErrPermissionDenied))
	// An unknown token is refused before anything runs.
	stranger := dial("guess")
	defer stranger.Close()
	_, err = stranger.Topics(ctx)
	fmt.Println("unknown token lists topics:", errors.Is(err, remote.ErrUnauthenticated))
	// Output:
	// stored at offset 0
	// app deletes a topic: true
	// unknown token lists topics: true
}

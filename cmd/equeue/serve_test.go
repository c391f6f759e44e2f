package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// server is a running "equeue serve".
type server struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

// startServe starts "equeue serve" with args; the test kills it if it is
// still running at the end.
func startServe(t *testing.T, args ...string) *server {
	t.Helper()
	s := &server{stderr: &syncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(bin, append([]string{"serve"}, args...)...)
	s.cmd.Env = cleanEnv()
	s.cmd.Stdout, s.cmd.Stderr = s.stderr, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// exited reports whether the server process has exited.
func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and returns the exit code.
func (s *server) stop(t *testing.T) int {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not exit within 30s of SIGTERM; its log:\n%s", s.stderr)
	}
	var ee *exec.ExitError
	if errors.As(s.err, &ee) {
		return ee.ExitCode()
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	return 0
}

// httpGet fetches url without keeping connections around.
func httpGet(url string) (int, string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestServe_RemoteTokensMetricsAndShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "orders", "--queues", "2")
	addr, maddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--metrics", maddr, "--log-format", "json",
		"--token", "s3cret=produce,consume,admin", "--token", "writer=produce", "--token", "reader=consume")
	eventually(t, 20*time.Second, "serve's /healthz", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet("http://" + maddr + "/healthz")
		return err == nil && code == http.StatusOK
	})

	// The directory is locked while serve runs, and the error says why.
	fails(t, 1, `locked by another process (a running "equeue serve"`, "--dir", dir, "topic", "list")

	remote := []string{"--server", addr, "--token", "s3cret"}
	out := ok(t, append(remote, "produce", "orders", "r1", "r2", "--key", "same")...)
	if n := strings.Count(out, "offset="); n != 2 {
		t.Fatalf("remote produce printed %q", out)
	}
	if r := cliIn(t, "r3\nr4\n", append(remote, "produce", "orders")...); r.code != 0 {
		t.Fatal(r)
	}
	// A produce-only token may produce...
	ok(t, "--server", addr, "--token", "writer", "produce", "orders", "r5")
	// A consume-only token may consume.
	got := jsonLines[messageJSON](t, ok(t, "--server", addr, "--token", "reader", "consume", "orders", "--from", "earliest", "--count", "5", "--output", "json", "--timeout", "20s"))
	b := bodies(got)
	slices.Sort(b)
	if !slices.Equal(b, []string{"r1", "r2", "r3", "r4", "r5"}) {
		t.Fatalf("remote consume: %v", b)
	}

	// ...but not consume, nor administer; a wrong token or none does nothing at all.
	fails(t, 1, "permission denied", "--server", addr, "--token", "writer", "consume", "orders", "--timeout", "1s")
	fails(t, 1, "permission denied", "--server", addr, "--token", "reader", "topic", "list")
	fails(t, 1, "unauthenticated", "--server", addr, "--token", "wrong", "produce", "orders", "x")
	fails(t, 1, "unauthenticated", "--server", addr, "produce", "orders", "x")

	// Admin commands through the server.
	topics := decode[[]topicJSON](t, ok(t, append(remote, "topic", "list", "--json")...))
	if len(topics) != 1 || topics[0].Messages != 5 {
		t.Fatalf("remote topic list: %+v", topics)
	}
	ok(t, append(remote, "produce", "orders", "r6")...)
	g := decode[groupJSON](t, ok(t, append(remote, "groups", "equeue-cli", "--json")...))
	if g.Lag != 1 {
		t.Fatalf("remote groups: %+v", g)
	}
	st := decode[statsJSON](t, ok(t, append(remote, "stats", "--json")...))
	if st.Messages != 6 || st.StoreBytes == nil || *st.StoreBytes <= 0 {
		t.Fatalf("remote stats: %+v", st)
	}

	// With tokens, /metrics needs the admin token (serve_metrics_test.go).
	code, _, body := httpGetBearer(t, "http://"+maddr+"/metrics", "s3cret")
	if code != http.StatusOK {
		t.Fatalf("scrape: %d %s", code, firstLine(body))
	}
	for _, want := range []string{
		"equeue_appended_messages_total{queue=",
		`equeue_pull_duration_seconds_bucket{result="messages",topic="orders"`,
		`equeue_group_lag{group="equeue-cli"`,
		"equeue_store_bytes ",
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM; its log:\n%s", code, srv.stderr)
	}
	log := srv.stderr.String()
	for _, want := range []string{`"msg":"serving"`, `"msg":"signal received, shutting down"`, `"msg":"engine closed","err":null`} {
		if !strings.Contains(log, want) {
			t.Errorf("serve's log lacks %s:\n%s", want, log)
		}
	}
	// The engine was closed cleanly: the directory opens again, with everything.
	ti := decode[topicJSON](t, ok(t, "--dir", dir, "topic", "describe", "orders", "--json"))
	if ti.Messages != 6 {
		t.Fatalf("after restart: %+v", ti)
	}
}

// writePEM writes one PEM block to a file in dir.
func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// issue makes a key and a certificate signed by parent (self-signed when
// parent is nil) and writes both; it returns the certificate and key.
func issue(t *testing.T, dir, name string, tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, dir, name+".pem", "CERTIFICATE", der)
	writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", kder)
	return cert, key
}

func TestServe_MutualTLS(t *testing.T) {
	t.Parallel()
	pki := t.TempDir()
	now := time.Now()
	ca, caKey := issue(t, pki, "ca", &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}, nil, nil)
	issue(t, pki, "server", &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, caKey)
	issue(t, pki, "client", &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "client"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, caKey)
	p := func(name string) string { return filepath.Join(pki, name) }

	dir := t.TempDir()
	addr := freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr,
		"--tls-cert", p("server.pem"), "--tls-key", p("server-key.pem"), "--client-ca", p("ca.pem"))
	client := []string{"--server", addr, "--connect-timeout", "2s", "--tls-ca", p("ca.pem"), "--tls-cert", p("client.pem"), "--tls-key", p("client-key.pem")}
	// Wait for the server by retrying a command until a deadline.
	eventually(t, 20*time.Second, "serve over TLS", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		return cli(t, append(client, "topic", "create", "secure")...).code == 0
	})
	ok(t, append(client, "produce", "secure", "over tls")...)
	out := ok(t, append(client, "consume", "secure", "--from", "earliest", "--count", "1", "--output", "body", "--timeout", "20s")...)
	if strings.TrimSpace(out) != "over tls" {
		t.Fatalf("consume over TLS: %q", out)
	}
	// Without a client certificate, or in plaintext, nothing gets through.
	fails(t, 1, "unavailable", "--server", addr, "--connect-timeout", "1s", "--tls-ca", p("ca.pem"), "topic", "list")
	fails(t, 1, "unavailable", "--server", addr, "--connect-timeout", "1s", "topic", "list")
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d; its log:\n%s", code, srv.stderr)
	}
}

package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// getWithHost gets path from the server at addr with the Host header set
// to host (and token, if not empty, as a bearer token), and returns the
// status and the first line of the body.
func getWithHost(t *testing.T, addr, path, host, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	require.NoError(t, err)
	req.Host = host
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, firstLine(string(b))
}

// assertLoopbackHostsOnly checks that each of paths on the loopback
// listener addr refuses a request whose Host is another site's name (a
// web page's, through DNS rebinding) and answers one to localhost or to a
// loopback address, with or without the port.
func assertLoopbackHostsOnly(t *testing.T, addr string, paths ...string) {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	for _, path := range paths {
		for _, host := range []string{net.JoinHostPort("evil.example", port), "evil.example", "127.0.0.1.evil.example"} {
			code, body := getWithHost(t, addr, path, host, "")
			assert.Equal(t, http.StatusForbidden, code, "%s with Host %s: %s", path, host, body)
		}
		for _, host := range []string{net.JoinHostPort("localhost", port), net.JoinHostPort("127.0.0.1", port), "localhost", "[::1]:" + port} {
			code, body := getWithHost(t, addr, path, host, "")
			assert.Equal(t, http.StatusOK, code, "%s with Host %s: %s", path, host, body)
		}
	}
}

// Without tokens, /metrics and /healthz on a loopback address are open to
// whoever reaches them, a web page the operator visits too, through DNS
// rebinding (its own name made to resolve to 127.0.0.1). They answer only
// requests addressed to localhost or a loopback address.
func TestServe_LoopbackMetricsAnswerOnlyLoopbackHosts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, maddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--metrics", maddr)
	eventually(t, 20*time.Second, "serve's /healthz", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet("http://" + maddr + "/healthz")
		return err == nil && code == http.StatusOK
	})
	assertLoopbackHostsOnly(t, maddr, "/metrics", "/healthz")
	assert.Equal(t, 0, srv.stop(t))
}

// pprof on a loopback address stays open, without tokens and with them
// (for go tool pprof on the machine): it answers only requests addressed
// to localhost or a loopback address, not a web page through DNS
// rebinding. On a network address, guarded by the tokens, the Host is not
// checked.
func TestServe_LoopbackPprofAnswersOnlyLoopbackHosts(t *testing.T) {
	t.Parallel()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	start := func(lis net.Listener, so *remote.ServerOptions, tokens map[string]remote.Rights) {
		grpcSrv, err := remote.NewServer(eng, so)
		require.NoError(t, err)
		t.Cleanup(grpcSrv.Stop)
		o := &otelAddon{pprof: lis.Addr().String()}
		stop, err := o.start(context.Background(), serveEnv{eng: eng, backend: eng, grpc: grpcSrv, tokens: tokens,
			log: slog.New(slog.DiscardHandler), errc: make(chan error, 1), ports: servePorts{"pprof": lis}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = stop(context.Background()) })
	}
	listen := func() net.Listener {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		return lis
	}
	tokens := map[string]remote.Rights{"ops": remote.RightAdmin}

	open := listen()
	start(open, &remote.ServerOptions{}, nil)
	assertLoopbackHostsOnly(t, open.Addr().String(), "/debug/pprof/", "/debug/pprof/goroutine?debug=1")

	guarded := listen()
	start(guarded, &remote.ServerOptions{Tokens: tokens}, tokens)
	assertLoopbackHostsOnly(t, guarded.Addr().String(), "/debug/pprof/", "/debug/pprof/goroutine?debug=1")

	network := listen()
	start(addrListener{network, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 6060}}, &remote.ServerOptions{Tokens: tokens}, tokens)
	code, body := getWithHost(t, network.Addr().String(), "/debug/pprof/goroutine?debug=1", "equeue.example:6060", "ops")
	assert.Equal(t, http.StatusOK, code, "a network address, its own name as Host: %s", body)
}

// A cluster node's /metrics and /healthz on a loopback address, without
// tokens, answer only requests to localhost or a loopback address too.
func TestCluster_LoopbackMetricsAnswerOnlyLoopbackHosts(t *testing.T) {
	t.Parallel()
	maddr := freePort(t)
	n := startClusterNode(t, t.TempDir(), "n1", true, "--metrics", maddr)
	eventually(t, 60*time.Second, "n1's /healthz", func() bool {
		if n.srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", n.srv.err, n.srv.stderr)
		}
		code, _, err := httpGet("http://" + maddr + "/healthz")
		return err == nil && code == http.StatusOK
	})
	assertLoopbackHostsOnly(t, maddr, "/metrics", "/healthz")
	assert.Equal(t, 0, n.srv.stop(t))
}

// A cluster node's admin address on loopback, without tokens, lets
// whoever reaches it read /cluster/status: it answers only requests to
// localhost or a loopback address, so that a web page cannot read it
// through DNS rebinding, while `equeue cluster` given either keeps working.
func TestCluster_LoopbackAdminAnswersOnlyLoopbackHosts(t *testing.T) {
	t.Parallel()
	n := startClusterNode(t, t.TempDir(), "n1", true)
	eventually(t, 60*time.Second, "n1's /cluster/status", func() bool {
		if n.srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", n.srv.err, n.srv.stderr)
		}
		code, _, err := httpGet("http://" + n.admin + "/cluster/status")
		return err == nil && code == http.StatusOK
	})
	assertLoopbackHostsOnly(t, n.admin, "/cluster/status")
	_, port, err := net.SplitHostPort(n.admin)
	require.NoError(t, err)
	for _, admin := range []string{n.admin, net.JoinHostPort("localhost", port)} {
		r := cli(t, "cluster", "status", "--admin", admin)
		assert.Equal(t, 0, r.code, "equeue cluster status --admin %s: %s", admin, r.stderr)
	}
	assert.Equal(t, 0, n.srv.stop(t))
}

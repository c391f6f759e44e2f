package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// halfFailing collects one gauge and one failure, as the engine's
// collector does when its group listing times out.
type halfFailing struct{ ok, failed *prometheus.Desc }

func (h halfFailing) Describe(ch chan<- *prometheus.Desc) { ch <- h.ok; ch <- h.failed }

func (h halfFailing) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(h.ok, prometheus.GaugeValue, 7)
	ch <- prometheus.NewInvalidMetric(h.failed, errors.New("listing groups: context deadline exceeded"))
}

// A collector that fails part of a scrape is logged, and the scrape still
// answers every metric that was collected, not HTTP 500 with none.
func TestServe_MetricsScrapeOutlivesAFailingCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(halfFailing{
		ok:     prometheus.NewDesc("equeue_test_ok", "collected", nil, nil),
		failed: prometheus.NewDesc("equeue_test_lag", "failed", nil, nil),
	})
	var logs bytes.Buffer
	a := newApp(nil, io.Discard, io.Discard)
	a.log = slog.New(slog.NewTextHandler(&logs, nil))
	rec := httptest.NewRecorder()
	a.metricsHandler(reg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "equeue_test_ok 7")
	assert.Contains(t, logs.String(), "listing groups: context deadline exceeded", "the failure is logged")
}

// opsTokens are the tokens the tests of serve's operator endpoints give:
// one of the whole engine with the admin right, one that only produces,
// one that only consumes, and one scoped to a namespace with every right.
var opsTokens = map[string]remote.Rights{"ops": remote.RightAdmin, "writer": remote.RightProduce,
	"reader": remote.RightConsume, "tenant": remote.RightAll}

// opsTokenFlags are opsTokens as serve's --token flags.
var opsTokenFlags = []string{"--token", "ops=admin", "--token", "writer=produce", "--token", "reader=consume",
	"--token", "tenant=all@tenant-a"}

// httpGetBearer gets url with "Authorization: Bearer token" (none when
// token is empty), and returns the status, the WWW-Authenticate header
// and the body.
func httpGetBearer(t *testing.T, url, token string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// assertOpsGuarded checks that url answers only the whole engine's admin
// token, "ops": 401 with a Bearer challenge without a token or with an
// unknown one, 403 for each of forbidden (tokens without the admin right
// or scoped to a namespace), and 200 with a body containing want for
// "ops".
func assertOpsGuarded(t *testing.T, url string, forbidden []string, want ...string) {
	t.Helper()
	for _, tok := range []string{"", "wrong"} {
		code, challenge, body := httpGetBearer(t, url, tok)
		assert.Equal(t, http.StatusUnauthorized, code, "token %q: %s", tok, firstLine(body))
		assert.True(t, strings.HasPrefix(challenge, "Bearer"), "token %q: WWW-Authenticate %q", tok, challenge)
		for _, w := range want {
			assert.False(t, strings.Contains(body, w), "token %q: the answer has %q", tok, w)
		}
	}
	for _, tok := range forbidden {
		code, _, body := httpGetBearer(t, url, tok)
		assert.Equal(t, http.StatusForbidden, code, "token %q: %s", tok, firstLine(body))
		for _, w := range want {
			assert.False(t, strings.Contains(body, w), "token %q: the answer has %q", tok, w)
		}
	}
	code, _, body := httpGetBearer(t, url, "ops")
	require.Equal(t, http.StatusOK, code, firstLine(body))
	for _, w := range want {
		assert.Contains(t, body, w)
	}
}

// With tokens, /metrics (topic and group names and counts of every
// namespace) answers only a token of the whole engine with the admin
// right, as the gRPC calls that list them do; /healthz stays open, for
// liveness probes.
func TestServe_MetricsNeedAnAdminTokenOfTheWholeEngine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "orders")
	addr, maddr := freePort(t), freePort(t)
	srv := startServe(t, append([]string{"--dir", dir, "--listen", addr, "--metrics", maddr}, opsTokenFlags...)...)
	eventually(t, 20*time.Second, "serve's /healthz", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet("http://" + maddr + "/healthz")
		return err == nil && code == http.StatusOK
	})
	ok(t, "--server", addr, "--token", "writer", "produce", "orders", "x")
	assertOpsGuarded(t, "http://"+maddr+"/metrics", []string{"writer", "reader", "tenant"}, `topic="orders"`, "equeue_store_bytes ", "go_goroutines ")
	assert.Equal(t, 0, srv.stop(t))
}

// addrListener is a listener that reports another address: serve's
// choices that depend on the address (loopback or not) can be tested
// without listening on a network interface.
type addrListener struct {
	net.Listener
	addr net.Addr
}

func (l addrListener) Addr() net.Addr { return l.addr }

// With tokens, pprof on a network address answers only a token of the
// whole engine with the admin right; on a loopback address it stays
// open, for go tool pprof on the machine itself.
func TestServe_PprofOnANetworkAddressNeedsAnAdminToken(t *testing.T) {
	t.Parallel()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	grpcSrv, err := remote.NewServer(eng, &remote.ServerOptions{Tokens: opsTokens,
		TokenNamespaces: map[string]string{"tenant": "tenant-a"}})
	require.NoError(t, err)
	t.Cleanup(grpcSrv.Stop)
	start := func(lis net.Listener) {
		o := &otelAddon{pprof: lis.Addr().String()}
		stop, err := o.start(context.Background(), serveEnv{eng: eng, backend: eng, grpc: grpcSrv,
			tokens: map[string]remote.Rights{"ops": remote.RightAdmin, "writer": remote.RightProduce, "reader": remote.RightConsume},
			log:    slog.New(slog.DiscardHandler), errc: make(chan error, 1), ports: servePorts{"pprof": lis}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = stop(context.Background()) })
	}
	network, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	start(addrListener{network, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 6060}})
	assertOpsGuarded(t, "http://"+network.Addr().String()+"/debug/pprof/goroutine?debug=1", []string{"writer", "reader", "tenant"}, "goroutine profile:")

	loopback, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	start(loopback)
	code, _, body := httpGetBearer(t, "http://"+loopback.Addr().String()+"/debug/pprof/goroutine?debug=1", "")
	assert.Equal(t, http.StatusOK, code, firstLine(body))
}

// firstLine is the first line of an answer's body, enough to tell an
// error from a profile in a failure's message.
func firstLine(body string) string {
	line, _, _ := strings.Cut(body, "\n")
	return line
}

// A cluster node's /metrics (the engine's series and the node's Raft
// series) needs the same token as a single server's (a node takes no
// namespace-scoped token).
func TestCluster_MetricsNeedAnAdminTokenOfTheWholeEngine(t *testing.T) {
	t.Parallel()
	maddr := freePort(t)
	base := t.TempDir()
	n := startClusterNode(t, base, "n1", true, "--metrics", maddr, "--cluster-secret-file", writeSecret(t, base, "secret"),
		"--token", "ops=admin", "--token", "writer=produce", "--token", "reader=consume")
	eventually(t, 60*time.Second, "n1's /healthz", func() bool {
		if n.srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", n.srv.err, n.srv.stderr)
		}
		code, _, err := httpGet("http://" + maddr + "/healthz")
		return err == nil && code == http.StatusOK
	})
	assertOpsGuarded(t, "http://"+maddr+"/metrics", []string{"writer", "reader"}, "equeue_cluster_term{", "go_goroutines ")
	assert.Equal(t, 0, n.srv.stop(t))
}

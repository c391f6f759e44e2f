package cluster_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
)

// TestAdminHandler_WithoutAuthOnLoopbackAnswersOnlyLoopbackHosts embeds
// AdminHandler, without WithAdminAuth, on a loopback listener, as a Go
// program may without `equeue serve` around it. A web page of another
// site whose name is made to resolve to 127.0.0.1 (DNS rebinding) would
// read /cluster/status through the operator's browser, which sends that
// site's name as Host: such a request gets 403 and a JSON error naming
// the Host, while one to localhost or a loopback address (any port, a
// trailing dot too) is answered. With WithAdminAuth the token guards the
// handler and the Host is not checked; on an address other than loopback
// (a private network) neither is it.
func TestAdminHandler_WithoutAuthOnLoopbackAnswersOnlyLoopbackHosts(t *testing.T) {
	c := newCluster(t, 1, nil)
	n := c.waitLeader()
	open := httptest.NewServer(cluster.AdminHandler(n))
	defer open.Close()
	auth := cluster.WithAdminAuth(func(tok string, change bool) (bool, bool) { return tok == "ops", tok == "ops" })
	guarded := httptest.NewServer(cluster.AdminHandler(n, auth))
	defer guarded.Close()
	_, port, err := net.SplitHostPort(open.Listener.Addr().String())
	require.NoError(t, err)

	do := func(base, method, path, host, token string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		require.NoError(t, err)
		req.Host = host
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(res.Body).Decode(&body)
		return res.StatusCode, body
	}
	for _, host := range []string{"evil.example", net.JoinHostPort("evil.example", port), "127.0.0.1.evil.example", "localhost.evil.example:" + port} {
		code, body := do(open.URL, "GET", "/cluster/status", host, "")
		assert.Equal(t, http.StatusForbidden, code, "status with Host %s", host)
		assert.Contains(t, body["error"], host, "the error names the Host")
		code, _ = do(open.URL, "POST", "/cluster/add?id=n9", host, "")
		assert.Equal(t, http.StatusForbidden, code, "a change with Host %s", host)
	}
	for _, host := range []string{net.JoinHostPort("localhost", port), "localhost", "LocalHost.:" + port, net.JoinHostPort("127.0.0.1", port), "127.0.0.1", "[::1]:" + port, "127.1.2.3:" + port} {
		code, body := do(open.URL, "GET", "/cluster/status", host, "")
		assert.Equal(t, http.StatusOK, code, "status with Host %s: %v", host, body)
	}
	// With a token, another name as Host is the token's business.
	code, body := do(guarded.URL, "GET", "/cluster/status", "equeue.example:7853", "ops")
	assert.Equal(t, http.StatusOK, code, "%v", body)

	// On a private network's address the Host is not checked.
	req := httptest.NewRequest("GET", "/cluster/status", nil)
	req.Host = "node1.internal:7853"
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 7853}))
	rec := httptest.NewRecorder()
	cluster.AdminHandler(n).ServeHTTP(rec, req)
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
}

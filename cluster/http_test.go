package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

func TestAdminHandler_TokensGuardStatusAndChanges(t *testing.T) {
	c := newCluster(t, 1, nil)
	n := c.waitLeader()
	rights := map[string]bool{"ops": true, "app": false} // token: may change
	auth := cluster.WithAdminAuth(func(tok string, change bool) (bool, bool) {
		mayChange, ok := rights[tok]
		return ok && (!change || mayChange), ok
	})
	srv := httptest.NewServer(cluster.AdminHandler(n, auth))
	defer srv.Close()
	open := httptest.NewServer(cluster.AdminHandler(n))
	defer open.Close()

	do := func(base, method, path, token string) int {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		return res.StatusCode
	}
	for _, tc := range []struct {
		name, method, path, token string
		want                      int
	}{
		{"status without a token", "GET", "/cluster/status", "", http.StatusUnauthorized},
		{"status with an unknown token", "GET", "/cluster/status", "nope", http.StatusUnauthorized},
		{"status with a reading token", "GET", "/cluster/status", "app", http.StatusOK},
		{"status with an admin token", "GET", "/cluster/status", "ops", http.StatusOK},
		{"change without a token", "POST", "/cluster/add?id=n9", "", http.StatusUnauthorized},
		{"change with a reading token", "POST", "/cluster/remove?id=n9", "app", http.StatusForbidden},
		{"change with a reading token", "POST", "/cluster/transfer", "app", http.StatusForbidden},
		// Past the guard: the handler itself refuses the missing parameter.
		{"change with an admin token", "POST", "/cluster/add?id=n9", "ops", http.StatusBadRequest},
	} {
		assert.Equal(t, tc.want, do(srv.URL, tc.method, tc.path, tc.token), tc.name)
	}
	assert.Equal(t, http.StatusOK, do(open.URL, "GET", "/cluster/status", ""), "no authentication without WithAdminAuth")
	assert.Equal(t, http.StatusBadRequest, do(open.URL, "POST", "/cluster/add?id=n9", ""))
}

// TestAdminHandler_RefusesChangesFromBrowsers posts changes as a web page
// would make a browser post them (a cross-site form, or a page whose name
// was rebound to the node's address): each is refused with 403 and the
// cluster is left as it was, with or without tokens; the same requests
// without a browser's headers reach the handler.
func TestAdminHandler_RefusesChangesFromBrowsers(t *testing.T) {
	c := newCluster(t, 1, nil)
	n := c.waitLeader()
	open := httptest.NewServer(cluster.AdminHandler(n))
	defer open.Close()
	auth := cluster.WithAdminAuth(func(tok string, change bool) (bool, bool) { return tok == "ops", tok == "ops" })
	guarded := httptest.NewServer(cluster.AdminHandler(n, auth))
	defer guarded.Close()
	before := n.Status()

	do := func(base, method, path, token string, headers map[string]string) int {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		require.NoError(t, err)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		return res.StatusCode
	}
	browsers := []map[string]string{
		{"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site"},
		{"Origin": "http://attacker.example"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
		// DNS rebinding: the browser takes the node for the page's own site.
		{"Origin": "http://rebound.example:8080", "Sec-Fetch-Site": "same-origin"},
	}
	for _, h := range browsers {
		for _, path := range []string{"/cluster/remove?id=" + before.ID, "/cluster/remove?id=n9", "/cluster/transfer", "/cluster/add?id=n9"} {
			assert.Equal(t, http.StatusForbidden, do(open.URL, "POST", path, "", h), "%s %v", path, h)
			assert.Equal(t, http.StatusForbidden, do(guarded.URL, "POST", path, "ops", h), "%s %v with a token", path, h)
		}
		// Reading the status stays open to a browser (an operator may look).
		assert.Equal(t, http.StatusOK, do(open.URL, "GET", "/cluster/status", "", h), "%v", h)
	}
	after := n.Status()
	assert.Equal(t, before.LeaderID, after.LeaderID, "leadership not moved")
	assert.Len(t, after.Servers, len(before.Servers), "no server added or removed")
	// A request the user typed into the address bar says Sec-Fetch-Site:
	// none; without a browser's headers the handler is reached.
	assert.Equal(t, http.StatusBadRequest, do(open.URL, "POST", "/cluster/add?id=n9", "", map[string]string{"Sec-Fetch-Site": "none"}))
	assert.Equal(t, http.StatusBadRequest, do(open.URL, "POST", "/cluster/add?id=n9", "", nil))
}

// TestAdminHandler_BearerSchemeIsCaseInsensitive sends the token with the
// scheme spelled as RFC 7235 allows: "bearer" and "BEARER" are "Bearer".
func TestAdminHandler_BearerSchemeIsCaseInsensitive(t *testing.T) {
	c := newCluster(t, 1, nil)
	n := c.waitLeader()
	auth := cluster.WithAdminAuth(func(tok string, change bool) (bool, bool) { return tok == "ops", tok == "ops" })
	srv := httptest.NewServer(cluster.AdminHandler(n, auth))
	defer srv.Close()
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		req, err := http.NewRequest("GET", srv.URL+"/cluster/status", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", scheme+" ops")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode, scheme)
	}
}

// A change that fails answers a status saying why: a node of another
// cluster (ErrForeignCluster) 409, a node that did not catch up in time
// (ErrNotCaughtUp) 504. Both answered 500, as an error of the node.
func TestAdminHandler_AddFailuresHaveTheirOwnStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("cluster: add voter n2: %w: it refused the leader's entries", cluster.ErrForeignCluster), http.StatusConflict},
		{fmt.Errorf("cluster: add voter n2: %w (its log holds up to 3 of 9): %w", cluster.ErrNotCaughtUp, context.DeadlineExceeded), http.StatusGatewayTimeout},
		{fmt.Errorf("cluster: add voter n2: %w", equeue.ErrInvalidArgument), http.StatusBadRequest},
		{&cluster.NotLeaderError{}, http.StatusConflict},
		{fmt.Errorf("cluster: remove server n2: %w", cluster.ErrWouldLoseQuorum), http.StatusConflict},
		{errors.New("disk on fire"), http.StatusInternalServerError},
	} {
		assert.Equal(t, tc.want, cluster.ChangeStatus(tc.err), "%v", tc.err)
	}
}

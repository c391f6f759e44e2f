package cluster_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

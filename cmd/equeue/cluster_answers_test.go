package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeAdmin answers every request to a --cluster-admin address with code
// and body, as a node's AdminHandler would.
func fakeAdmin(t *testing.T, code int, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// `equeue cluster add` of a node of another cluster (409) or of a node
// that did not catch up in time (504) exits 1 with the node's error text,
// naming the node it was adding, and says what to do next.
func TestCluster_AddFailuresAreSaidClearly(t *testing.T) {
	for _, tc := range []struct {
		code          int
		error, advice string
	}{
		{http.StatusConflict, "cluster: add voter n2: cluster: the node belongs to another cluster (its directory holds another cluster's data): it refused the leader's entries; removed again", "empty its directory"},
		{http.StatusGatewayTimeout, "cluster: add voter n2: cluster: the node did not catch up with the leader's log in time (its log holds up to 0 of 8): context deadline exceeded; removed again", "reach its Raft address"},
	} {
		admin := fakeAdmin(t, tc.code, `{"error": "`+tc.error+`"}`)
		r := runBounded(t, nil, "cluster", "add", "n2", "127.0.0.1:7752", "--admin", admin)
		require.Equal(t, 1, r.code, "%v", r)
		require.Contains(t, r.stderr, "cluster add n2 at 127.0.0.1:7752 failed", "%d", tc.code)
		require.Contains(t, r.stderr, tc.error)
		require.Contains(t, r.stderr, tc.advice)
		require.Empty(t, r.stdout)
	}
}

// `equeue cluster status` of a node removed from the cluster says so.
func TestCluster_StatusShowsARemovedNode(t *testing.T) {
	admin := fakeAdmin(t, http.StatusOK, `{"ID": "n2", "State": "Follower", "Removed": true, "Servers": [{"ID": "n1", "RaftAddr": "127.0.0.1:7751", "Voter": true}]}`)
	r := runBounded(t, nil, "cluster", "status", "--admin", admin)
	require.Equal(t, 0, r.code, "%v", r)
	require.Regexp(t, `removed:\s+true`, r.stdout)

	admin = fakeAdmin(t, http.StatusOK, `{"ID": "n1", "State": "Leader", "Servers": [{"ID": "n1", "RaftAddr": "127.0.0.1:7751", "Voter": true}]}`)
	r = runBounded(t, nil, "cluster", "status", "--admin", admin)
	require.Equal(t, 0, r.code, "%v", r)
	require.NotContains(t, r.stdout, "removed")
}

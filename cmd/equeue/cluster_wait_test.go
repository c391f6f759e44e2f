package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `equeue cluster add` waits for the node's answer as long as the node
// waits for the new node to catch up (cluster.AdminHandler), not the
// bound of the other cluster commands. Before, it gave up after 40 s;
// its leaving ended the node's wait too, which then removed the node it
// was adding: a node whose catch-up took longer could not be added with
// the command. Here the other commands' bound is shortened, and the
// node answers well after it.
func TestCluster_AddWaitsAsLongAsTheNodeDoes(t *testing.T) {
	defer func(d time.Duration) { clusterCallWait = d }(clusterCallWait)
	clusterCallWait = 50 * time.Millisecond
	gaveUp := make(chan bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(20 * clusterCallWait): // the new node caught up
		case <-r.Context().Done():
		}
		gaveUp <- r.Context().Err() != nil
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"result": "ok"}`)
	}))
	defer srv.Close()
	admin := strings.TrimPrefix(srv.URL, "http://")
	r := runBounded(t, nil, "cluster", "add", "n2", "127.0.0.1:7752", "--admin", admin)
	require.Equal(t, 0, r.code, "%v", r)
	require.Contains(t, r.stdout, "added n2 at 127.0.0.1:7752")
	require.False(t, <-gaveUp, "the command left before the node answered")
}

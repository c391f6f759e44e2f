package cluster_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/console"
	"github.com/equeue-go/equeue/remote"
)

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// The web console works over a replicated cluster through a ClusterClient:
// it shows what the leader stores, an action goes through Raft to every
// node, and after the leader is lost it goes on against the new leader.
func TestCluster_ConsoleOverTheCluster(t *testing.T) {
	sc := newServedCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cc, err := remote.DialCluster(sc.addrs, nil)
	require.NoError(t, err)
	defer cc.Close()
	createTopicOver(ctx, t, cc, "orders", equeue.TopicOptions{Queues: 2})
	p, err := equeue.NewProducer(cc, nil)
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Send(ctx, &equeue.Message{Topic: "orders", Keys: []string{"k"}, Body: []byte("first order")})
	require.NoError(t, err)

	mux := http.NewServeMux()
	mux.Handle("/admin/", console.New(cc, console.Options{Prefix: "/admin/"}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer hc.CloseIdleConnections()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := hc.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	code, body := get("/admin/")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "orders")
	assert.Contains(t, body, "Store size", "the leader's store size through the cluster client")
	code, body = get("/admin/topics/orders/messages?key=k")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "first order")

	// An action: add two queues; it is replicated to every node.
	code, body = get("/admin/topics/orders")
	require.Equal(t, http.StatusOK, code, body)
	m := consoleCSRF.FindStringSubmatch(body)
	require.NotNil(t, m, "the topic page has a CSRF token")
	resp, err := hc.PostForm(srv.URL+"/admin/topics/orders/queues", url.Values{"csrf": {m[1]}, "count": {"2"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	ti, err := cc.Topic(ctx, "orders")
	require.NoError(t, err)
	assert.Len(t, ti.Queues, 4)

	// The leader goes; the console answers from the new one.
	sc.stop(sc.leaderIndex())
	sc.waitLeader()
	eventually(t, 60*time.Second, func() error {
		code, body := get("/admin/topics/orders/messages?key=k")
		if code != http.StatusOK || !strings.Contains(body, "first order") {
			return assert.AnError
		}
		return nil
	})
	ti, err = cc.Topic(ctx, "orders")
	require.NoError(t, err)
	assert.Len(t, ti.Queues, 4, "the queues added through the console survived the failover")
	code, body = get("/admin/topics/orders")
	require.Equal(t, http.StatusOK, code, body)
}

// The console served by a node (as `serve --cluster-id --console` does)
// shows the cluster on the leader and, on a follower, an error naming the
// leader.
func TestCluster_ConsoleOnANode(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.createTopic(t, "orders", 2)
	c.waitConverged()
	leader := c.waitLeader()
	get := func(n *cluster.Node) (int, string) {
		srv := httptest.NewServer(console.New(n, console.Options{}))
		defer srv.Close()
		res, err := http.Get(srv.URL + "/topics/orders")
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	code, body := get(leader)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "<h1>orders")
	follower := c.nodes[(c.leaderIndex()+1)%3]
	code, body = get(follower)
	assert.NotEqual(t, http.StatusOK, code)
	assert.Contains(t, body, "not the cluster leader")
	assert.Contains(t, body, leader.Status().ID)
}

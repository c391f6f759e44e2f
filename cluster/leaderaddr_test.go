package cluster_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/testport"
)

// AddVoter refuses to change the leader's own Raft address (an invalid
// argument, 400 over the admin API, saying to transfer leadership first),
// and nothing changes. Before, it took a mistyped address: the followers
// dialed the leader there in vain, so they no longer heard from it.
// Giving the leader's own address again changes nothing and is no error.
func TestNode_AddVoterRefusesChangingTheLeadersOwnAddress(t *testing.T) {
	c := newCluster(t, 1, nil)
	leader := c.waitLeader()
	before := leader.Status().LastLogIndex
	other := testport.Addr(t)

	err := leader.AddVoter(t.Context(), leader.ID(), other)
	require.ErrorIs(t, err, equeue.ErrInvalidArgument)
	require.ErrorContains(t, err, "transfer leadership")
	require.Equal(t, before, leader.Status().LastLogIndex, "a configuration entry for a refused change")
	require.Equal(t, c.addrs[0], leader.Status().Servers[0].RaftAddr)

	srv := httptest.NewServer(cluster.AdminHandler(leader))
	defer srv.Close()
	res, err := http.Post(srv.URL+"/cluster/add?"+url.Values{"id": {leader.ID()}, "raft": {other}}.Encode(), "", nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode, "%s", body)
	require.Contains(t, string(body), "transfer leadership")

	require.NoError(t, leader.AddVoter(t.Context(), leader.ID(), c.addrs[0]), "the leader's own address again")
	require.Equal(t, c.addrs[0], leader.Status().Servers[0].RaftAddr)
}

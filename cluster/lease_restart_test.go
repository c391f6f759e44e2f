package cluster_test

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
)

// A member that ran before may have answered a leader's heartbeat just
// before it stopped, which promised that leader it would not vote for
// another node for a heartbeat timeout (the leader serves reads on that
// promise, lease.go). Restarted at once, it must keep the promise: it
// grants no vote before a heartbeat timeout has passed since its Open
// began. Without the wait it granted one as soon as Open returned.
func TestNode_RestartedMemberVotesOnlyAfterALease(t *testing.T) {
	// The candidate's listener first, so that it cannot take the port n3
	// is about to listen on again.
	candidate, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, time.Second, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { _ = candidate.Close() })
	c := newCluster(t, 3, nil)
	c.waitConverged()
	c.closeAll()

	o := nodeOptions(c.id(2), c.addrs[2])
	began := time.Now()
	opened := make(chan error, 1)
	go func() {
		n, err := cluster.Open(c.dirs[2], o)
		c.nodes[2] = n // closed by the cluster's cleanup
		opened <- err
	}()
	// n1 (a voter in n3's configuration) asks for n3's vote, with a term
	// and a log newer than anything n3 has, until n3 grants it.
	req := &raft.RequestVoteRequest{
		RPCHeader:    raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(c.id(0)), Addr: []byte(c.addrs[0])},
		Term:         1 << 20,
		LastLogIndex: 1 << 40,
		LastLogTerm:  1 << 20,
	}
	var granted time.Duration
	deadline := time.Now().Add(20 * time.Second)
	for granted == 0 && time.Now().Before(deadline) {
		var resp raft.RequestVoteResponse
		if err := candidate.RequestVote(raft.ServerID(c.id(2)), raft.ServerAddress(c.addrs[2]), req, &resp); err == nil && resp.Granted {
			granted = time.Since(began)
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	require.NoError(t, <-opened)
	require.NotZero(t, granted, "the restarted member never granted the vote")
	require.GreaterOrEqual(t, granted, o.HeartbeatTimeout,
		"the restarted member voted %v after its Open began, within a lease it may have granted", granted)
}

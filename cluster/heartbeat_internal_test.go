package cluster

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A heartbeat that carries a newer term reaches Raft's main loop through
// the transport's consumer (and the commit relay), never a handler on the
// transport's goroutine, where it could change the node's term while the
// main loop stamps a write (heartbeat.go).
func TestTransport_HeartbeatsReachRaftsMainLoop(t *testing.T) {
	follower := newProgressTransport(testTransport(t))
	t.Cleanup(follower.stopRelay)
	var fastPath atomic.Int32
	follower.SetHeartbeatHandler(func(rpc raft.RPC) {
		fastPath.Add(1)
		rpc.Respond(&raft.AppendEntriesResponse{Term: 9, Success: true}, nil)
	})
	consumer := follower.Consumer()

	leader := testLeader(t)
	heartbeat := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ID: []byte("n2"), Addr: []byte(leader.LocalAddr())},
		Term:      9,
	}
	answered := make(chan error, 1)
	var resp raft.AppendEntriesResponse
	go func() {
		answered <- leader.AppendEntries("n1", follower.LocalAddr(), heartbeat, &resp)
	}()

	select {
	case rpc := <-consumer:
		args, ok := rpc.Command.(*raft.AppendEntriesRequest)
		require.True(t, ok, "the call is an AppendEntries call: %T", rpc.Command)
		assert.Equal(t, uint64(9), args.Term)
		assert.Empty(t, args.Entries)
		rpc.Respond(&raft.AppendEntriesResponse{Term: 9, Success: true, LastLog: 7}, nil)
	case err := <-answered:
		t.Fatalf("the heartbeat was answered without reaching the consumer (fast path called %d times, err %v)", fastPath.Load(), err)
	case <-time.After(10 * time.Second):
		t.Fatal("the heartbeat never reached the consumer")
	}
	require.NoError(t, <-answered)
	assert.Equal(t, uint64(7), resp.LastLog, "the main loop's answer reached the leader")
	assert.Zero(t, fastPath.Load(), "the transport's fast path ran")
}

package cluster

import (
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// testTransport is a Raft network transport on loopback, closed when the
// test ends.
func testTransport(t *testing.T) *raft.NetworkTransport {
	tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, time.Second, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// testFollower is a transport that answers every AppendEntries call with
// answer's response, until the test ends.
func testFollower(t *testing.T, answer func(*raft.AppendEntriesRequest) *raft.AppendEntriesResponse) *raft.NetworkTransport {
	follower := testTransport(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(stop); wg.Wait() })
	wg.Go(func() {
		for {
			select {
			case rpc := <-follower.Consumer():
				rpc.Respond(answer(rpc.Command.(*raft.AppendEntriesRequest)), nil)
			case <-stop:
				return
			}
		}
	})
	return follower
}

// testLeader is a node's transport (progress, clamp, drained pipeline) on
// loopback.
func testLeader(t *testing.T) *progressTransport {
	leader := newProgressTransport(testTransport(t))
	t.Cleanup(leader.CloseStreams)
	return leader
}

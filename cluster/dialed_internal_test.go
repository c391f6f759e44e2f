package cluster

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// A node's Raft transport closes its connections to an address the
// configuration no longer holds and drops them from its pool: a node
// added again at that address is called on a new connection at once.
// Before, the closed connections stayed pooled, and the first calls to
// the address took them and failed.
func TestCloseGone_ClosesAndUnpoolsAnAddressLeftOut(t *testing.T) {
	follower := testFollower(t, func(*raft.AppendEntriesRequest) *raft.AppendEntriesResponse {
		return &raft.AppendEntriesResponse{Success: true}
	})
	addr := follower.LocalAddr()
	ts, err := listenTCP("127.0.0.1:0")
	require.NoError(t, err)
	stream := newDialedStream(ts)
	leader := raft.NewNetworkTransport(stream, raftPoolSize, time.Second, io.Discard)
	t.Cleanup(func() { leader.CloseStreams(); _ = leader.Close() })

	call := func() error {
		var resp raft.AppendEntriesResponse
		return leader.AppendEntries("f", addr, &raft.AppendEntriesRequest{Term: 1}, &resp)
	}
	require.NoError(t, call())
	require.Equal(t, 1, stream.count(addr), "the call's connection is pooled, open")

	kept := raft.Configuration{Servers: []raft.Server{{ID: "f", Address: addr}}}
	require.Empty(t, closeGone(leader, stream, kept), "an address the configuration holds keeps its connections")
	require.Equal(t, 1, stream.count(addr))

	other := raft.Configuration{Servers: []raft.Server{{ID: "o", Address: "127.0.0.1:1"}}}
	dropped := closeGone(leader, stream, other)
	require.Contains(t, dropped, addr)
	require.Zero(t, stream.count(addr), "the connection is closed")
	require.Empty(t, closeGone(leader, stream, other), "nothing left to close")

	// Added again: the next call dials.
	require.NoError(t, call(), "the first call to the address again finds no closed connection pooled")
	require.Equal(t, 1, stream.count(addr))
	require.Equal(t, 1, dropped[addr], "the one pooled connection was dropped")
}

// No configuration at all (a node not yet added) closes nothing.
func TestCloseGone_EmptyConfigurationClosesNothing(t *testing.T) {
	follower := testFollower(t, func(*raft.AppendEntriesRequest) *raft.AppendEntriesResponse {
		return &raft.AppendEntriesResponse{Success: true}
	})
	addr := follower.LocalAddr()
	ts, err := listenTCP("127.0.0.1:0")
	require.NoError(t, err)
	stream := newDialedStream(ts)
	leader := raft.NewNetworkTransport(stream, raftPoolSize, time.Second, io.Discard)
	t.Cleanup(func() { leader.CloseStreams(); _ = leader.Close() })

	var resp raft.AppendEntriesResponse
	require.NoError(t, leader.AppendEntries("f", addr, &raft.AppendEntriesRequest{Term: 1}, &resp))
	require.Empty(t, closeGone(leader, stream, raft.Configuration{}))
	require.Equal(t, 1, stream.count(addr))
}

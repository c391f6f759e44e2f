package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A follower that refuses a pipelined call makes Raft stop reading the
// pipeline's answers (pipelineDecode returns) while its sender may still
// send. Over the network transport's own pipeline the third call after
// that never returns (hashicorp/raft issue 612); over the node's it
// returns, and Close ends the pipeline.
func TestPipeline_SendsAfterRaftStopsReading(t *testing.T) {
	// A gap: the follower lacks the previous entry.
	follower := testFollower(t, func(*raft.AppendEntriesRequest) *raft.AppendEntriesResponse {
		return &raft.AppendEntriesResponse{Term: 1, Success: false}
	})
	leader := testLeader(t)
	p, err := leader.AppendEntriesPipeline("f", follower.LocalAddr())
	require.NoError(t, err)
	req := func(prev uint64) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax},
			Term: 1, PrevLogEntry: prev, PrevLogTerm: 1}
	}
	_, err = p.AppendEntries(req(10), &raft.AppendEntriesResponse{})
	require.NoError(t, err)
	first := <-p.Consumer()
	require.NoError(t, first.Error())
	require.False(t, first.Response().Success, "the follower refused")

	// Raft reads no more answers; its sender sends a few more calls before
	// it sees that.
	sent := make(chan error, 1)
	go func() {
		for i := range 4 {
			if _, err := p.AppendEntries(req(11+uint64(i)), &raft.AppendEntriesResponse{}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("a pipelined call blocked after Raft stopped reading the answers")
	}
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the pipeline did not close")
	}
	assert.NoError(t, p.Close(), "Close is idempotent")
}

// Answers reach Raft in the order of the calls, each with its own
// response, while Raft reads.
func TestPipeline_AnswersInOrder(t *testing.T) {
	follower := testFollower(t, func(req *raft.AppendEntriesRequest) *raft.AppendEntriesResponse {
		return &raft.AppendEntriesResponse{Term: 1, Success: true, LastLog: req.PrevLogEntry + uint64(len(req.Entries))}
	})
	leader := testLeader(t)
	p, err := leader.AppendEntriesPipeline("f", follower.LocalAddr())
	require.NoError(t, err)
	defer p.Close()
	const n = 50
	go func() {
		for i := range n {
			req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax},
				Term: 1, PrevLogEntry: uint64(i), PrevLogTerm: 1, Entries: []*raft.Log{{Index: uint64(i) + 1, Term: 1}}}
			if _, err := p.AppendEntries(req, &raft.AppendEntriesResponse{}); err != nil {
				return
			}
		}
	}()
	for i := range n {
		f := <-p.Consumer()
		require.NoError(t, f.Error())
		assert.EqualValues(t, i, f.Request().PrevLogEntry, "answer %d", i)
		assert.EqualValues(t, i+1, f.Response().LastLog, "answer %d", i)
	}
}

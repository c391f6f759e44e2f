package cluster

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// fakeLeader sends a node AppendEntries calls as the leader of a term.
type fakeLeader struct {
	t    *testing.T
	id   string
	tr   *raft.NetworkTransport
	term uint64
}

// send makes one call and returns the node's answer.
func (l *fakeLeader) send(node raft.ServerAddress, prev, prevTerm, commit uint64, entries ...*raft.Log) *raft.AppendEntriesResponse {
	l.t.Helper()
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(l.id), Addr: []byte(l.tr.LocalAddr())},
		Term:      l.term, PrevLogEntry: prev, PrevLogTerm: prevTerm, Entries: entries, LeaderCommitIndex: commit,
	}
	var resp raft.AppendEntriesResponse
	require.NoError(l.t, l.tr.AppendEntries("a", node, req, &resp))
	return &resp
}

// command is a Raft command entry of the leader's term.
func (l *fakeLeader) command(index uint64, data []byte) *raft.Log {
	return &raft.Log{Index: index, Term: l.term, Type: raft.LogCommand, Data: data}
}

// openAmongFakeLeaders opens node "a" (with the log store kind) in a
// configuration of three voters whose others, "b" (term 2) and "c" (term
// 3), are fake leaders, and returns the node, its Raft address, the two
// and the configuration's peers.
func openAmongFakeLeaders(t *testing.T, kind string) (*Node, raft.ServerAddress, *fakeLeader, *fakeLeader, []Peer) {
	t.Helper()
	b, c := &fakeLeader{t: t, id: "b", tr: testTransport(t), term: 2}, &fakeLeader{t: t, id: "c", tr: testTransport(t), term: 3}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	self := l.Addr().String()
	require.NoError(t, l.Close())
	peers := []Peer{{ID: "a", RaftAddr: self}, {ID: "b", RaftAddr: string(b.tr.LocalAddr())}, {ID: "c", RaftAddr: string(c.tr.LocalAddr())}}
	o := &Options{
		ID: "a", RaftAddr: self, ClientAddr: "client-a", Bootstrap: true, Peers: peers, LogStore: kind,
		// Long enough that the node never starts an election of its own.
		HeartbeatTimeout: 5 * time.Second, ElectionTimeout: 5 * time.Second, LeaderLeaseTimeout: time.Second,
	}
	n, err := Open(t.TempDir(), o)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, n.Close()) })
	return n, raft.ServerAddress(n.RaftAddr()), b, c, peers
}

// A node that holds entries of a deposed leader nobody else has applies
// none of them when the new leader's call proves less of its log than it
// holds: it applies only what the new leader's entries replace them with.
// (The multi-process Jepsen test found a node applying its own unreplicated
// write that way, after a SIGSTOP of the leader, then refusing every later
// write to that queue.)
func TestNode_AppliesOnlyEntriesItCheckedAgainstTheLeader(t *testing.T) {
	n, addr, b, c, _ := openAmongFakeLeaders(t, "")

	q := store.QueueID{Topic: 1}
	write := func(tenure uint64, values ...string) []byte {
		sb := &store.Batch{}
		for i, v := range values {
			sb.Entries = append(sb.Entries, store.Entry{Queue: q, Offset: uint64(i), Value: []byte(v)})
		}
		return encodeBatch(tenure, sb)
	}
	applied := func(want uint64) {
		t.Helper()
		handed := func() uint64 { // the last entry the FSM was handed, and answered
			n.fsm.applyMu.Lock()
			defer n.fsm.applyMu.Unlock()
			return n.fsm.handed
		}
		require.Eventually(t, func() bool { return handed() == want }, 10*time.Second, time.Millisecond,
			"applied %d, want %d", handed(), want)
	}

	// Leader b (term 2) commits its tenure (index 2), then sends a write
	// (index 3) that only this node receives.
	resp := b.send(addr, 1, 1, 2, b.command(2, encodeTenure(1, "b", "client-b", "")), b.command(3, write(1, "b-0", "b-1")))
	require.True(t, resp.Success, "%+v", resp)
	applied(2)

	// Leader c (term 3) never had index 3. Its first call proves the log
	// up to index 2 only, with its own commit index 3 (its tenure, which a
	// majority holds).
	resp = c.send(addr, 2, 2, 3)
	require.True(t, resp.Success, "%+v", resp)
	// Then it sends its entries: its tenure at 3 and a write at 4.
	resp = c.send(addr, 2, 2, 3, c.command(3, encodeTenure(2, "c", "client-c", "")))
	require.True(t, resp.Success, "%+v", resp)
	resp = c.send(addr, 3, 3, 4, c.command(4, write(2, "c-0", "c-1")))
	require.True(t, resp.Success, "%+v", resp)
	applied(4)

	recs, err := n.st.Read(q, 0, 100, 100, 1<<20)
	require.NoError(t, err)
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value))
	}
	assert.Equal(t, []string{"0:c-0", "1:c-1"}, got, "the store holds what leader c committed, not b's unreplicated write")
	assert.EqualValues(t, 2, n.fsm.current().tenure)
	assert.NoError(t, n.fsm.err())
}

// Every call a node sends carries a commit index no higher than the last
// index it proves, so a follower that takes the commit index as it comes
// applies nothing it did not check.
func TestTransport_SendsNoCommitPastWhatTheCallProves(t *testing.T) {
	seen := make(chan uint64, 4)
	follower := testFollower(t, func(req *raft.AppendEntriesRequest) *raft.AppendEntriesResponse {
		seen <- req.LeaderCommitIndex
		return &raft.AppendEntriesResponse{Success: true, LastLog: req.PrevLogEntry + uint64(len(req.Entries))}
	})
	leader := testLeader(t)
	var resp raft.AppendEntriesResponse
	for _, tc := range []struct {
		prev    uint64
		entries []*raft.Log
		want    uint64
	}{
		{prev: 4, want: 4},
		{prev: 4, entries: []*raft.Log{{Index: 5, Term: 1}, {Index: 6, Term: 1}}, want: 6},
		{prev: 0, want: 0},
		{prev: 12, want: 10},
	} {
		req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: 1,
			PrevLogEntry: tc.prev, PrevLogTerm: 1, Entries: tc.entries, LeaderCommitIndex: 10}
		require.NoError(t, leader.AppendEntries("f", follower.LocalAddr(), req, &resp))
		assert.EqualValues(t, tc.want, <-seen, "prev %d, %d entries", tc.prev, len(tc.entries))
	}
	p, err := leader.AppendEntriesPipeline("f", follower.LocalAddr())
	require.NoError(t, err)
	defer p.Close()
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: 1,
		PrevLogEntry: 4, PrevLogTerm: 1, Entries: []*raft.Log{{Index: 5, Term: 1}}, LeaderCommitIndex: 10}
	fut, err := p.AppendEntries(req, &raft.AppendEntriesResponse{})
	require.NoError(t, err)
	require.NoError(t, fut.Error())
	assert.EqualValues(t, 5, <-seen, "pipelined")
}

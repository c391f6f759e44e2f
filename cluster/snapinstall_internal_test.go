package cluster

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// installSnapshot sends the node a snapshot of the leader's log up to
// index (of term) and returns the node's answer.
func (l *fakeLeader) installSnapshot(node raft.ServerAddress, index, term uint64, conf raft.Configuration, data []byte) *raft.InstallSnapshotResponse {
	l.t.Helper()
	req := &raft.InstallSnapshotRequest{
		RPCHeader:       raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(l.id), Addr: []byte(l.tr.LocalAddr())},
		SnapshotVersion: raft.SnapshotVersionMax, Term: l.term, LastLogIndex: index, LastLogTerm: term,
		Configuration: raft.EncodeConfiguration(conf), ConfigurationIndex: 1, Size: int64(len(data)),
	}
	var resp raft.InstallSnapshotResponse
	require.NoError(l.t, l.tr.InstallSnapshot("a", node, req, &resp, bytes.NewReader(data)))
	return &resp
}

// A node whose log ends with a deposed leader's entries, which nobody else
// holds, past the index of the snapshot the new leader sends it, follows
// the new leader once the snapshot is installed. hashicorp/raft (v1.7.3)
// keeps those entries (or, with raft-wal, its idea of them) after the
// install, refuses every later call at the snapshot's index for the term
// mismatch, and the leader, which compacted its log, sends the snapshot
// again: the node never follows the log again (hashicorp/raft issue 697).
func TestNode_FollowsTheLeaderAfterASnapshotOverItsDivergentLog(t *testing.T) {
	for _, kind := range []string{LogStoreWAL, LogStoreBolt} {
		t.Run(kind, func(t *testing.T) {
			n, addr, b, c, peers := openAmongFakeLeaders(t, kind)

			q := store.QueueID{Topic: 1}
			write := func(tenure, from uint64, values ...string) []byte {
				sb := &store.Batch{}
				for i, v := range values {
					sb.Entries = append(sb.Entries, store.Entry{Queue: q, Offset: from + uint64(i), Value: []byte(v)})
				}
				return encodeBatch(tenure, sb)
			}

			// Leader b (term 2) commits its tenure (index 2), then sends
			// writes (indexes 3 to 5) that only this node receives.
			resp := b.send(addr, 1, 1, 2, b.command(2, encodeTenure(1, "b", "client-b", "")),
				b.command(3, write(1, 0, "b-0")), b.command(4, write(1, 1, "b-1")), b.command(5, write(1, 2, "b-2")))
			require.True(t, resp.Success, "%+v", resp)
			require.Eventually(t, func() bool { return n.fsm.current().applied == 2 }, 10*time.Second, time.Millisecond)

			// Leader c (term 3) committed b's tenure, its own (3) and a write
			// (4), and compacted its log: it sends a snapshot up to index 4.
			f, _ := newTestFSM(t, nil)
			cl := []*raft.Log{
				{Index: 2, Term: 2, Type: raft.LogCommand, Data: encodeTenure(1, "b", "client-b", "")},
				c.command(3, encodeTenure(2, "c", "client-c", "")),
				c.command(4, write(2, 0, "c-0", "c-1")),
			}
			for i, r := range f.ApplyBatch(cl) {
				require.Nil(t, r, "entry %d", cl[i].Index)
			}
			sn, err := f.Snapshot()
			require.NoError(t, err)
			var data bytes.Buffer
			data.Write(binary.BigEndian.AppendUint64(nil, 4))
			_, err = sn.(*fsmSnapshot).sn.WriteTo(&data)
			sn.Release()
			require.NoError(t, err)
			var conf raft.Configuration
			for _, p := range peers {
				conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr), Suffrage: raft.Voter})
			}
			sresp := c.installSnapshot(addr, 4, 3, conf, data.Bytes())
			require.True(t, sresp.Success, "%+v", sresp)

			// Then it goes on from its snapshot: a write at 5.
			resp = c.send(addr, 4, 3, 5, c.command(5, write(2, 2, "c-2")))
			require.True(t, resp.Success, "the node refuses the call that follows the snapshot: %+v", resp)
			require.Eventually(t, func() bool { return n.fsm.current().applied == 5 }, 10*time.Second, time.Millisecond)

			recs, err := n.st.Read(q, 0, 100, 100, 1<<20)
			require.NoError(t, err)
			var got []string
			for _, r := range recs {
				got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value))
			}
			assert.Equal(t, []string{"0:c-0", "1:c-1", "2:c-2"}, got)
			assert.NoError(t, n.fsm.err())
			var e raft.Log
			require.NoError(t, n.alog.GetLog(5, &e))
			assert.EqualValues(t, 3, e.Term, "the log holds the leader's entry at 5")
			for i := uint64(2); i <= 4; i++ {
				if err := n.alog.inner.GetLog(i, &e); err == nil {
					assert.EqualValues(t, 3, e.Term, "no entry of the deposed leader is left at %d", i)
				}
			}
		})
	}
}

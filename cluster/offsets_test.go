package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// queueOf reads the store ID of a topic's queue from the topic's metadata.
func queueOf(t *testing.T, n *cluster.Node, topic string, queue int) store.QueueID {
	t.Helper()
	v, err := cluster.StoreOf(n).GetMeta([]byte("topic/" + topic))
	require.NoError(t, err)
	var m struct {
		ID uint32 `json:"id"`
	}
	require.NoError(t, json.Unmarshal(v, &m))
	return store.QueueID{Topic: m.ID, Queue: uint32(queue)}
}

// storedOffsets returns the offsets node n's store holds for q, and its
// records' bytes.
func storedOffsets(t *testing.T, n *cluster.Node, q store.QueueID) ([]uint64, [][]byte) {
	t.Helper()
	recs, err := cluster.StoreOf(n).Read(q, 0, 1<<32, 1000, 0)
	require.NoError(t, err)
	var offs []uint64
	var vals [][]byte
	for _, r := range recs {
		offs = append(offs, r.Offset)
		vals = append(vals, r.Value)
	}
	return offs, vals
}

// servingTenure waits until a node serves and returns it with its tenure.
func servingTenure(t *testing.T, c *testCluster) (*cluster.Node, uint64) {
	t.Helper()
	var l *cluster.Node
	var tenure uint64
	eventually(t, 30*time.Second, func() error {
		l = c.waitLeader()
		if _, err := l.Engine(); err != nil {
			return err
		}
		if tenure = cluster.TenureOf(l); tenure == 0 {
			return errors.New("no tenure yet")
		}
		return nil
	})
	return l, tenure
}

// TestFSM_ForgedOffsetsRefusedOnEveryNode replicates batch entries of the
// current tenure whose appends leave a gap, overlap stored records, or are
// not dense: every node refuses each one alike, stores nothing of it (its
// records nor its metadata), and the refusal ends the tenure; the next
// leader engine goes on at the right offset.
func TestFSM_ForgedOffsetsRefusedOnEveryNode(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := context.Background()
	c.createTopic(t, "t", 1)
	for i := range 3 {
		c.sendBatch(t, "t", 0, [][]byte{fmt.Append(nil, "m", i)})
	}
	l, _ := servingTenure(t, c)
	q := queueOf(t, l, "t", 0)
	_, vals := storedOffsets(t, l, q)
	require.Len(t, vals, 3)
	rec := vals[0]

	for _, tc := range []struct {
		name    string
		offsets []uint64
	}{
		{"gap", []uint64{5}},
		{"overlap", []uint64{1}},
		{"rewrite of the last", []uint64{2, 3}},
		{"not dense", []uint64{3, 5}},
		{"repeated", []uint64{3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, tenure := servingTenure(t, c)
			b := &store.Batch{Meta: []store.MetaOp{{Key: []byte("forged/" + tc.name), Value: []byte("x")}}}
			for _, off := range tc.offsets {
				b.Entries = append(b.Entries, store.Entry{Queue: q, Offset: off, Value: []byte("forged")})
			}
			err := cluster.ApplyRaw(l, tenure, b)
			require.ErrorIs(t, err, cluster.ErrOffsetMismatch)
			c.waitConverged()
			for i, n := range c.nodes {
				offs, got := storedOffsets(t, n, q)
				assert.Equal(t, []uint64{0, 1, 2}, offs, "node %s", c.id(i))
				for _, v := range got {
					assert.NotEqual(t, "forged", string(v), "node %s", c.id(i))
				}
				_, err := cluster.StoreOf(n).GetMeta([]byte("forged/" + tc.name))
				assert.ErrorIs(t, err, store.ErrNotFound, "node %s stored the refused batch's metadata", c.id(i))
				assert.NotEqual(t, tenure, cluster.TenureOf(n), "node %s: the refusal ends the tenure", c.id(i))
			}
		})
	}

	// A batch that continues the queue is taken (the check refuses only
	// what does not), and the leader's next engine goes on after it.
	l, tenure := servingTenure(t, c)
	require.NoError(t, cluster.ApplyRaw(l, tenure, &store.Batch{Entries: []store.Entry{{Queue: q, Offset: 3, Value: rec}}}))
	// That engine's memory does not have offset 3 taken: its first write is
	// refused (see the next test) and the next tenure's goes on after 3.
	var res equeue.AppendResult
	eventually(t, 30*time.Second, func() error {
		l, _ = servingTenure(t, c)
		var err error
		res, err = l.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after")}}})
		return err
	})
	assert.Equal(t, int64(4), res.FirstOffset)
	c.waitConverged()
	for i, n := range c.nodes {
		offs, _ := storedOffsets(t, n, q)
		assert.Equal(t, []uint64{0, 1, 2, 3, 4}, offs, "node %s", c.id(i))
	}
}

// TestFSM_EngineWriteOverATakenOffsetIsNotStored: an entry of the leader's
// own tenure takes the queue's next offset behind its engine's back (what
// tenure fencing exists to prevent). The engine's next send would write
// over it: every node refuses that batch, the send fails as not stored
// (equeue.ErrNotLeader: nothing done, retry), and a new tenure's engine,
// reading the queue's end from the store, stores the retry after it.
func TestFSM_EngineWriteOverATakenOffsetIsNotStored(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := context.Background()
	c.createTopic(t, "t", 1)
	c.sendBatch(t, "t", 0, [][]byte{[]byte("m0")})
	c.sendBatch(t, "t", 0, [][]byte{[]byte("m1")})
	l, _ := servingTenure(t, c)
	q := queueOf(t, l, "t", 0)
	_, vals := storedOffsets(t, l, q)
	l, tenure := servingTenure(t, c)
	require.NoError(t, cluster.ApplyRaw(l, tenure, &store.Batch{Entries: []store.Entry{{Queue: q, Offset: 2, Value: vals[1]}}}))

	_, err := l.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("late")}}})
	require.Error(t, err)
	assert.ErrorIs(t, err, equeue.ErrNotLeader, "refused everywhere: not stored")
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate)
	c.waitConverged()
	for i, n := range c.nodes {
		offs, got := storedOffsets(t, n, q)
		assert.Equal(t, []uint64{0, 1, 2}, offs, "node %s", c.id(i))
		for _, v := range got {
			assert.NotContains(t, string(v), "late", "node %s", c.id(i))
		}
	}

	var res equeue.AppendResult
	eventually(t, 30*time.Second, func() error {
		l, _ = servingTenure(t, c)
		res, err = l.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("late")}}})
		return err
	})
	assert.Equal(t, int64(3), res.FirstOffset, "the next tenure appends after the taken offset")
	assert.NotEqual(t, tenure, cluster.TenureOf(l))
}

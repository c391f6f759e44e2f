package cluster

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// A node whose store refused entries for a full disk catches up from the
// entry the refusal began at, not from the last entry its store holds as
// applied: entries the FSM ignored (of a superseded tenure, undecodable,
// configuration) do not move that, and when more of them came in a row
// than the log keeps behind a snapshot, the log no longer holds them.
// Catching up from there failed for good (until a restart).
func TestFSM_CatchUpAfterAFullDiskStartsPastIgnoredEntries(t *testing.T) {
	f, st := newTestFSM(t, nil)
	logs := map[uint64]*raft.Log{}
	compacted := uint64(0) // entries up to it are gone from the log
	f.getLog = func(i uint64, l *raft.Log) error {
		e, ok := logs[i]
		if !ok || i <= compacted {
			return raft.ErrLogNotFound
		}
		*l = *e
		return nil
	}
	full := false
	f.writeHook = func(*store.Batch) error {
		if full {
			return fmt.Errorf("%w: injected", store.ErrNoSpace)
		}
		return nil
	}
	q := store.QueueID{Topic: 1}
	write := func(tenure, off uint64) []byte {
		return encodeBatch(tenure, &store.Batch{Entries: []store.Entry{{Queue: q, Offset: off, Value: []byte("v")}}})
	}
	apply := func(ls ...*raft.Log) []any {
		for _, l := range ls {
			logs[l.Index] = l
		}
		return f.ApplyBatch(ls)
	}
	cmd := func(i uint64, data []byte) *raft.Log { return &raft.Log{Index: i, Type: raft.LogCommand, Data: data} }

	for i, a := range apply(cmd(1, encodeTenure(1, "n1", "c1", "")), cmd(2, write(1, 0))) {
		require.Nil(t, a, "entry %d", i+1)
	}
	// A deposed leader's late writes and configuration entries, ignored.
	for i := uint64(3); i <= 20; i++ {
		if i%2 == 0 {
			apply(&raft.Log{Index: i, Type: raft.LogConfiguration})
		} else {
			require.ErrorIs(t, apply(cmd(i, write(9, 1)))[0].(error), errStaleTenure)
		}
	}
	require.EqualValues(t, 2, f.current().applied)
	compacted = 15 // a snapshot, then compaction behind it

	full = true
	require.ErrorIs(t, apply(cmd(21, write(1, 1)))[0].(error), store.ErrNoSpace)
	full = false
	f.retry()
	require.NoError(t, f.err(), "the node catches up once its store takes writes again")
	assert.EqualValues(t, 21, f.current().applied)
	_, next, ok, err := st.Bounds(q)
	require.NoError(t, err)
	require.True(t, ok)
	assert.EqualValues(t, 2, next)
}

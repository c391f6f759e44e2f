package cluster

import (
	"bytes"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// restoreScript returns fsmScript's log, every entry carrying the cluster
// ID id, and the snapshot of an FSM that applied it all.
func restoreScript(t *testing.T, id string) ([]*raft.Log, *fsm, []byte) {
	t.Helper()
	src, _ := newTestFSM(t, nil)
	logs := stamped(fsmScript(), id)
	src.ApplyBatch(logs)
	require.NoError(t, src.err())
	return logs, src, persisted(t, src)
}

// A snapshot whose store loads whole but whose state the node cannot read
// (here: shorter than its fixed fields) breaks the FSM: its store is the
// snapshot's now, and the state it held before says nothing of it, so it
// applies no entry until a snapshot is installed whole. Before, Restore
// failed but left the FSM following the log with its old state, and the
// next entry was applied onto the snapshot's store.
func TestFSM_RestoreOfAnUnreadableStateBreaksTheFSM(t *testing.T) {
	id := newClusterID()
	logs, src, good := restoreScript(t, id)
	require.NoError(t, src.st.Write(&store.Batch{Meta: []store.MetaOp{{Key: stateKey, Value: []byte{1, 2, 3}}}}))
	bad := persisted(t, src)

	f, st := newTestFSM(t, nil)
	for i, a := range f.ApplyBatch(stamped(fsmScript()[:3], id)) {
		require.Nil(t, a, "entry %d", i)
	}
	err := f.Restore(io.NopCloser(bytes.NewReader(bad)))
	require.ErrorIs(t, err, errBadEntry)
	require.ErrorIs(t, f.err(), errBadEntry, "the FSM follows the log on a store its state does not describe")
	require.Equal(t, fsmState{clusterID: id}, f.current(), "the state held before the restore, or the ID lost")

	// An entry of the tenure the FSM was in before the restore.
	before := dump(t, st)
	next := &raft.Log{Index: logs[len(logs)-1].Index + 1, Term: 1, Type: raft.LogCommand, Extensions: stampID(id),
		Data: encodeBatch(1, &store.Batch{Meta: []store.MetaOp{{Key: []byte("k"), Value: []byte("e")}}})}
	require.NotNil(t, f.ApplyBatch([]*raft.Log{next})[0], "an entry applied onto the snapshot's store")
	require.Equal(t, before, dump(t, st), "an entry applied onto the snapshot's store")

	require.NoError(t, f.Restore(io.NopCloser(bytes.NewReader(good))))
	require.NoError(t, f.err())
	require.Equal(t, src.current(), f.current())
}

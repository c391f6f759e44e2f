package cluster

import (
	"bytes"
	"io"
	"log/slog"
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

// A snapshot the store refuses before it changes anything (what follows
// the FSM's header is not a store snapshot) leaves the store and the FSM
// as they were: the node goes on following the log. Before, the FSM was
// broken until a snapshot was installed whole, though its store was
// intact.
func TestFSM_RestoreRefusedBeforeTheStoreChangedKeepsFollowing(t *testing.T) {
	id := newClusterID()
	logs, _, whole := restoreScript(t, id)
	want, _ := newTestFSM(t, nil)
	want.ApplyBatch(logs)
	hl := len(appendSnapHeader(nil, snapHeader{clusterID: id}))
	bad := bytes.Clone(whole)
	bad[hl] ^= 0xff // the store snapshot's magic

	f, st := newTestFSM(t, nil)
	f.ApplyBatch(logs[:3])
	require.NoError(t, f.err())
	before, state := dump(t, st), f.current()
	err := f.Restore(io.NopCloser(bytes.NewReader(bad)))
	require.ErrorIs(t, err, store.ErrRestoreRefused)
	require.NoError(t, f.err(), "the FSM stopped following the log on an intact store")
	require.Equal(t, before, dump(t, st))
	require.Equal(t, state, f.current())

	f.ApplyBatch(logs[3:])
	require.NoError(t, f.err())
	require.Equal(t, dump(t, want.st), dump(t, st))
	require.Equal(t, want.current(), f.current())
}

// A node that restarts on a store holding part of a snapshot keeps the
// cluster ID of that snapshot: it refuses a snapshot of another cluster
// (and the relay, which asks the FSM, refuses entries and snapshots of
// another cluster), and installs one of its own. Before, its cluster ID
// was empty, so it took any cluster's.
func TestFSM_RestoreCutShortKeepsTheClusterID(t *testing.T) {
	id := newClusterID()
	_, src, whole := restoreScript(t, id)
	_, _, foreign := restoreScript(t, newClusterID())

	f, st := newTestFSM(t, nil)
	require.Error(t, f.Restore(io.NopCloser(bytes.NewReader(whole[:len(whole)/2]))))
	require.Equal(t, id, f.current().clusterID, "the cluster ID of the snapshot cut short")

	// The node restarts on that store.
	again, err := newFSM(st, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.ErrorIs(t, again.err(), errRestoreCutShort)
	require.Equal(t, id, again.current().clusterID, "a restarted node forgot its cluster ID")
	require.ErrorIs(t, again.Restore(io.NopCloser(bytes.NewReader(foreign))), ErrForeignCluster)
	require.ErrorIs(t, again.err(), errRestoreCutShort)
	require.NoError(t, again.Restore(io.NopCloser(bytes.NewReader(whole))))
	require.NoError(t, again.err())
	require.Equal(t, src.current(), again.current())
}

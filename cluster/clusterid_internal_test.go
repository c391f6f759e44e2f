package cluster

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// stamped returns logs with each command entry carrying the cluster ID id.
func stamped(logs []*raft.Log, id string) []*raft.Log {
	for _, l := range logs {
		if l.Type == raft.LogCommand {
			l.Extensions = stampID(id)
		}
	}
	return logs
}

// persisted returns f's snapshot as Persist writes it.
func persisted(t *testing.T, f *fsm) []byte {
	t.Helper()
	fs, err := f.Snapshot()
	require.NoError(t, err)
	defer fs.Release()
	var sink bufferSink
	require.NoError(t, fs.Persist(&sink))
	return sink.Bytes()
}

// A node without a cluster ID (new, or of a version before IDs) takes the
// ID of the first entry it applies that carries one, keeps it across a
// restart, and applies nothing of another cluster: its store stays as it
// was and it follows no entry more.
func TestFSM_TakesTheClusterIDOfTheFirstEntryCarryingOne(t *testing.T) {
	f, st := newTestFSM(t, nil)
	logs := fsmScript()
	// Entries of a version before IDs: taken, no ID.
	f.ApplyBatch(logs[:3])
	require.NoError(t, f.err())
	require.Empty(t, f.current().clusterID)

	id := newClusterID()
	f.ApplyBatch(stamped(logs[3:6], id))
	require.NoError(t, f.err())
	require.Equal(t, id, f.current().clusterID)

	again, err := newFSM(st, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Equal(t, id, again.current().clusterID, "the ID survives a restart")
	require.Equal(t, f.current(), again.current())

	before, state := dump(t, st), again.current()
	out := again.ApplyBatch(stamped(logs[6:], newClusterID()))
	require.ErrorIs(t, out[0].(error), ErrForeignCluster)
	require.ErrorIs(t, again.err(), ErrForeignCluster)
	require.Equal(t, before, dump(t, st), "an entry of another cluster was applied")
	require.Equal(t, state, again.current())
}

// A snapshot carries its cluster's ID in its header; a node takes it with
// the store. A snapshot of another cluster is refused, the store kept.
func TestFSM_SnapshotCarriesTheClusterID(t *testing.T) {
	src, srcSt := newTestFSM(t, nil)
	id := newClusterID()
	src.ApplyBatch(stamped(fsmScript(), id))
	require.NoError(t, src.err())
	whole := persisted(t, src)
	h, err := readSnapHeader(bytes.NewReader(whole))
	require.NoError(t, err)
	require.Equal(t, snapHeader{applied: src.current().applied, clusterID: id}, h)

	dst, dstSt := newTestFSM(t, nil)
	require.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(whole))))
	require.Equal(t, dump(t, srcSt), dump(t, dstSt))
	require.Equal(t, src.current(), dst.current(), "the node took the cluster ID with the store")

	other, otherSt := newTestFSM(t, nil)
	other.ApplyBatch(stamped(fsmScript()[:2], newClusterID()))
	before, state := dump(t, otherSt), other.current()
	require.ErrorIs(t, other.Restore(io.NopCloser(bytes.NewReader(whole))), ErrForeignCluster)
	require.NoError(t, other.err(), "the node follows its own cluster still")
	require.Equal(t, before, dump(t, otherSt))
	require.Equal(t, state, other.current())
}

// A snapshot written before cluster IDs (its header the applied index
// alone) still restores; one of a header version this node does not know
// is refused, saying so, and the store kept.
func TestFSM_RestoresASnapshotOfTheFirstFormat(t *testing.T) {
	src, srcSt := newTestFSM(t, nil)
	src.ApplyBatch(fsmScript())
	require.NoError(t, src.err())
	whole := persisted(t, src)
	hl := len(appendSnapHeader(nil, snapHeader{}))
	old := append(binary.BigEndian.AppendUint64(nil, src.current().applied), whole[hl:]...)

	dst, dstSt := newTestFSM(t, nil)
	require.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(old))))
	require.NoError(t, dst.err())
	require.Equal(t, dump(t, srcSt), dump(t, dstSt))
	require.Equal(t, src.current(), dst.current())

	future := bytes.Clone(whole)
	future[len(snapMagic)] = snapVersion + 1
	next, nextSt := newTestFSM(t, nil)
	before := dump(t, nextSt)
	err := next.Restore(io.NopCloser(bytes.NewReader(future)))
	require.ErrorIs(t, err, errSnapshotVersion)
	require.ErrorContains(t, err, "version 2")
	require.Equal(t, before, dump(t, nextSt))
}

// The relay refuses, before Raft sees them, AppendEntries calls carrying
// a command entry of another cluster and InstallSnapshot calls of another
// cluster, answering with ErrForeignCluster; it hands on calls of its own
// cluster, or carrying no ID, as they came. A node without an ID takes
// any.
func TestRelay_RefusesCallsOfAnotherCluster(t *testing.T) {
	own, theirs := newClusterID(), newClusterID()
	current := own
	in := make(chan raft.RPC)
	r := &commitRelay{clusterID: func() string { return current }, log: slog.New(slog.DiscardHandler)}
	out := r.start(in)
	defer r.close()

	// call hands rpc to the relay and returns what reached Raft (nil when
	// the relay answered it itself) and the answer it gave.
	call := func(cmd any, snapshot []byte) (*raft.RPC, error) {
		t.Helper()
		answer := make(chan raft.RPCResponse, 1)
		rpc := raft.RPC{Command: cmd, RespChan: answer}
		if snapshot != nil {
			rpc.Reader = bytes.NewReader(snapshot)
		}
		in <- rpc
		select {
		case got := <-out:
			// Raft answers it (an install waits for the answer).
			got.Respond(&raft.InstallSnapshotResponse{}, nil)
			<-answer
			return &got, nil
		case a := <-answer:
			return nil, a.Error
		}
	}
	entries := func(id string) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{Term: 2, PrevLogEntry: 1, PrevLogTerm: 1, Entries: []*raft.Log{
			{Index: 2, Term: 2, Type: raft.LogNoop},
			{Index: 3, Term: 2, Type: raft.LogCommand, Data: []byte("x"), Extensions: stampID(id)},
		}}
	}
	got, err := call(entries(theirs), nil)
	require.ErrorIs(t, err, ErrForeignCluster)
	require.ErrorContains(t, err, showID(own))
	require.ErrorContains(t, err, showID(theirs))
	require.Nil(t, got)
	for _, id := range []string{own, ""} {
		got, err = call(entries(id), nil)
		require.NoError(t, err)
		require.NotNil(t, got)
	}

	snapshot := func(id string) []byte {
		return append(appendSnapHeader(nil, snapHeader{applied: 3, clusterID: id}), "the store's snapshot"...)
	}
	install := &raft.InstallSnapshotRequest{Term: 2, LastLogIndex: 3, LastLogTerm: 2}
	refused := bytes.NewReader(snapshot(theirs))
	answer := make(chan raft.RPCResponse, 1)
	in <- raft.RPC{Command: install, Reader: refused, RespChan: answer}
	require.ErrorIs(t, (<-answer).Error, ErrForeignCluster)
	require.Zero(t, refused.Len(), "the refused snapshot's stream was not read to its end")
	for _, data := range [][]byte{snapshot(own), snapshot(""), binary.BigEndian.AppendUint64(nil, 3)} {
		got, err = call(install, data)
		require.NoError(t, err)
		require.NotNil(t, got)
		passed, err := io.ReadAll(got.Reader)
		require.NoError(t, err)
		require.Equal(t, data, passed, "the stream Raft reads is the one sent")
	}

	current = ""
	got, err = call(entries(theirs), nil)
	require.NoError(t, err, "a node without an ID takes any")
	require.NotNil(t, got)
}

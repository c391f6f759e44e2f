package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Restore whose load fails a commit makes no commit after it: the failed
// one is the last to reach Badger. Restore reports the failure, the store
// says it is cut short (across a reopen too), and it holds the snapshot's
// first keys, those of the commits before the failed one, and not all.
func TestBadgerSnapshot_RestoreLoadStopsAtTheFailedCommit(t *testing.T) {
	opts := &BadgerOptions{MemTableSize: 1 << 20} // small transactions: many commits
	src, err := OpenBadger(t.TempDir(), opts)
	require.NoError(t, err)
	val := make([]byte, 500)
	const keys = 10000
	for i := 0; i < keys/100; i++ {
		b := &Batch{}
		for j := 0; j < 100; j++ {
			b.Meta = append(b.Meta, MetaOp{Key: fmt.Appendf(nil, "k-%05d", i*100+j), Value: val})
		}
		require.NoError(t, src.Write(b))
	}
	sn, err := src.Snapshot()
	require.NoError(t, err)
	var snapshot bytes.Buffer
	_, err = sn.WriteTo(&snapshot)
	sn.Release()
	require.NoError(t, err)
	require.NoError(t, src.Close())

	dir := t.TempDir()
	s, err := OpenBadger(dir, opts)
	require.NoError(t, err)
	injected := errors.New("injected commit failure")
	const failAt = 3
	var commits, after atomic.Int64
	s.loadCommit = func(txn *badger.Txn) error {
		switch c := commits.Add(1); {
		case c == failAt:
			txn.Discard()
			return injected
		case c > failAt:
			after.Add(1)
		}
		return txn.Commit()
	}
	err = s.Restore(bytes.NewReader(snapshot.Bytes()))
	require.ErrorIs(t, err, injected, "the load's failed commit is reported")
	assert.Zero(t, after.Load(), "commits made after the failed one")
	require.EqualValues(t, failAt, commits.Load(), "the load stops at the failed commit")
	cut, err := s.RestoreCutShort()
	require.NoError(t, err)
	assert.True(t, cut, "a store left half-restored says so")
	require.NoError(t, s.Close())

	s, err = OpenBadger(dir, opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	cut, err = s.RestoreCutShort()
	require.NoError(t, err)
	assert.True(t, cut, "across a reopen")
	n := int64(0)
	for i := 0; i < keys; i++ {
		if v, err := s.GetMeta(fmt.Appendf(nil, "k-%05d", i)); err == nil && v != nil {
			require.EqualValues(t, i, n, "the keys loaded are the snapshot's first ones, in order")
			n++
		}
	}
	assert.Positive(t, n, "the commits before the failed one are kept")
	assert.Less(t, n, int64(keys), "the failed commit's keys and the rest are not loaded")
}

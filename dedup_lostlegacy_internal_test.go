package equeue

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// unreadableMeta is a store that cannot read back the metadata value of
// key bad: ScanMeta fails on it, and ScanMetaDamaged
// (store.DamagedMetaScanner) hands it over with no value and an error
// matching store.ErrDamaged, as Badger does for a value a crash lost.
type unreadableMeta struct {
	Store
	bad []byte
}

func (s *unreadableMeta) lost(k []byte) error {
	if s.bad != nil && bytes.Equal(k, s.bad) {
		return fmt.Errorf("%w: value of %q unreadable", store.ErrDamaged, k)
	}
	return nil
}

func (s *unreadableMeta) ScanMeta(prefix []byte, fn func(key, value []byte) error) error {
	return s.Store.ScanMeta(prefix, func(k, v []byte) error {
		if err := s.lost(k); err != nil {
			return err
		}
		return fn(k, v)
	})
}

func (s *unreadableMeta) ScanMetaDamaged(prefix []byte, fn func(key, value []byte, damaged error) error) error {
	return s.Store.ScanMeta(prefix, func(k, v []byte) error {
		if err := s.lost(k); err != nil {
			return fn(k, nil, err)
		}
		return fn(k, v, nil)
	})
}

// TestDedup_LostOldFormatEntriesAreDroppedAtOpen: an entry of the former
// format (a key per ID) whose value the store cannot read back, or whose
// value has the wrong length, is deleted at Open and counted in
// CorruptRecords; the others are moved into groups and still answer
// duplicates. Either made every Open fail (a plain scan; ErrCorrupt).
func TestDedup_LostOldFormatEntriesAreDroppedAtOpen(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	st := &unreadableMeta{Store: mem}
	e, err := Open("", &Options{Store: st})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	tp, ok := e.lookupTopic("t")
	require.True(t, ok)
	appendIDs(t, e, "t", 6, "m-%d") // offsets 0 to 5: the entries' places are stored
	at := time.Now().Round(0)
	st.bad = dedupMetaKey(tp.id, "unreadable")
	require.NoError(t, mem.Write(&store.Batch{Meta: []store.MetaOp{
		{Key: dedupMetaKey(tp.id, "good"), Value: dedupValue(dedupEntry{offset: 4, at: at})},
		{Key: dedupMetaKey(tp.id, "unreadable"), Value: dedupValue(dedupEntry{offset: 5, at: at})},
		{Key: dedupMetaKey(tp.id, "short"), Value: []byte{1, 2, 3}},
	}}))
	require.NoError(t, e.Close())

	for round := range 2 {
		e, err = Open("", &Options{Store: st})
		require.NoError(t, err, "round %d", round)
		if round == 0 {
			assert.Equal(t, uint64(2), e.Stats().CorruptRecords, "each lost entry counted once")
		} else {
			assert.Zero(t, e.Stats().CorruptRecords, "deleted: the next Open meets them no more")
		}
		assert.Zero(t, dedupKeys(t, mem, keyDedupPrefix), "moved or deleted")
		res, err := e.Append(ctx, &AppendRequest{Topic: "t", Messages: []*Message{{ID: "good", Body: []byte("x")}}})
		require.NoError(t, err)
		assert.True(t, res.Duplicate)
		assert.Equal(t, int64(4), res.FirstOffset)
		require.NoError(t, e.Close())
	}
}

// Close leaves the memory store open for the next Open.
func (s *unreadableMeta) Close() error { return nil }

// TestDedup_OutOfRangeOldFormatEntriesAreCountedAtOpen: an entry of the
// former format whose value has the right length but a queue or offset no
// engine writes (a queue past 2^31-1, an offset below -1) is garbled as
// much as one of the wrong length: Open deletes it and counts it in
// CorruptRecords like the others, and the good entry still answers
// duplicates. It was deleted and logged but not counted.
func TestDedup_OutOfRangeOldFormatEntriesAreCountedAtOpen(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	st := &unreadableMeta{Store: mem}
	e, err := Open("", &Options{Store: st})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	tp, ok := e.lookupTopic("t")
	require.True(t, ok)
	appendIDs(t, e, "t", 6, "m-%d")
	at := time.Now().Round(0)
	require.NoError(t, mem.Write(&store.Batch{Meta: []store.MetaOp{
		{Key: dedupMetaKey(tp.id, "good"), Value: dedupValue(dedupEntry{offset: 4, at: at})},
		{Key: dedupMetaKey(tp.id, "queue-past-int32"), Value: dedupValue(dedupEntry{queue: 1<<32 - 1, offset: 5, at: at})},
		{Key: dedupMetaKey(tp.id, "offset-below-minus-one"), Value: dedupValue(dedupEntry{offset: -7, at: at})},
	}}))
	require.NoError(t, e.Close())

	e, err = Open("", &Options{Store: st})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	assert.Equal(t, uint64(2), e.Stats().CorruptRecords, "each garbled entry counted once")
	assert.Zero(t, dedupKeys(t, mem, keyDedupPrefix), "moved or deleted")
	res, err := e.Append(ctx, &AppendRequest{Topic: "t", Messages: []*Message{{ID: "good", Body: []byte("x")}}})
	require.NoError(t, err)
	assert.True(t, res.Duplicate)
	assert.Equal(t, int64(4), res.FirstOffset)
}

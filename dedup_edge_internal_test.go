package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// TestDedup_IDPastItsWindowIsStoredAgainAndAnsweredFromItsNewEntry: at
// the window's edge an ID whose entry is past the window, but still held
// (expiry has not passed it: an entry sent after it in the same group is
// not expired) or expiring in the very write that records it again, is
// stored again, at a new offset; its resend is then a duplicate at that
// offset, in process and after a reopen, which loads both entries and
// must answer with the later one. The expired entries are aged by
// rewriting their groups' times, so no test waits for a window.
func TestDedup_IDPastItsWindowIsStoredAgainAndAnsweredFromItsNewEntry(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	const window = time.Hour
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: window}))
	send := func(ids ...string) AppendResult {
		t.Helper()
		ms := make([]*Message, len(ids))
		for i, id := range ids {
			ms[i] = &Message{ID: id, Body: []byte(id)}
		}
		res, err := e.Append(ctx, &AppendRequest{Topic: "t", Messages: ms})
		require.NoError(t, err)
		return res
	}
	send("alone")          // 0: its group holds it alone
	send("old", "fresh")   // 1, 2: one group, old first
	send("fresh2", "old2") // 3, 4: one group, the expired one after one that is not

	// Age the entries of alone, old and old2 past the window.
	aged := map[string]bool{"alone": true, "old": true, "old2": true}
	past := time.Now().Add(-window - time.Minute).Round(0)
	var rewrite []store.MetaOp
	require.NoError(t, e.st.ScanMeta(keyDedupGroupPrefix, func(k, v []byte) error {
		type ent struct {
			id string
			d  dedupEntry
		}
		var ents []ent
		_, err := decodeDedupGroup(v, func(id []byte, d dedupEntry) {
			if aged[string(id)] {
				d.at = past
			}
			ents = append(ents, ent{string(id), d})
		})
		require.NoError(t, err)
		nv := newDedupGroupValue(past, 0)
		for _, en := range ents {
			nv = appendDedupGroupEntry(nv, past.UnixNano(), en.id, en.d)
		}
		rewrite = append(rewrite, store.MetaOp{Key: append([]byte(nil), k...), Value: nv})
		return nil
	}))
	require.Len(t, rewrite, 3)
	require.NoError(t, e.st.Write(&store.Batch{Meta: rewrite}))
	require.NoError(t, e.Close())
	e, err = Open(dir, nil)
	require.NoError(t, err)

	// Past the window: stored again, each alone and in one append.
	want := map[string]int64{"alone": 5, "old": 6, "old2": 7, "fresh": 2, "fresh2": 3}
	assert.False(t, send("alone").Duplicate)
	r := send("old", "old2")
	assert.False(t, r.Duplicate)
	assert.Equal(t, int64(6), r.FirstOffset)
	for round := range 2 {
		if round == 1 {
			require.NoError(t, e.Close())
			e, err = Open(dir, nil)
			require.NoError(t, err)
		}
		for id, off := range want {
			r := send(id)
			assert.True(t, r.Duplicate, "round %d: %s", round, id)
			assert.Equal(t, off, r.FirstOffset, "round %d: %s answered from its latest entry", round, id)
		}
		r := send("old", "old2")
		assert.True(t, r.Duplicate, "round %d", round)
		assert.Equal(t, int64(6), r.FirstOffset, "round %d", round)
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		assert.Equal(t, int64(8), info.Queues[0].MaxOffset, "round %d: nothing stored twice", round)
	}
}

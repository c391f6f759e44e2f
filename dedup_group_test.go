package equeue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// TestDedupGroup_CodecRoundTripsAndRefusesDamage: a group's value gives
// back its entries (an empty ID, a delayed entry's offset -1, a time
// before the base); every truncation of it is refused with ErrCorrupt and
// a version this code does not know with ErrUnsupportedFormat, never a
// panic.
func TestDedupGroup_CodecRoundTripsAndRefusesDamage(t *testing.T) {
	base := time.Unix(1_700_000_000, 123)
	type ent struct {
		id string
		d  dedupEntry
	}
	in := []ent{
		{"", dedupEntry{queue: 0, offset: 0, at: base}},
		{"order-1", dedupEntry{queue: 3, offset: 1 << 40, at: base}},
		{"delayed", dedupEntry{queue: 1<<31 - 1, offset: -1, at: base.Add(-time.Minute)}},
		{string(make([]byte, 5000)), dedupEntry{queue: 2, offset: 9, at: base.Add(time.Hour)}},
	}
	v := newDedupGroupValue(base, 0)
	for _, e := range in {
		v = appendDedupGroupEntry(v, base.UnixNano(), e.id, e.d)
	}
	var out []ent
	n, err := decodeDedupGroup(v, func(id []byte, d dedupEntry) { out = append(out, ent{string(id), d}) })
	require.NoError(t, err)
	require.Equal(t, len(in), n)
	for i := range in {
		assert.Equal(t, in[i].id, out[i].id)
		assert.Equal(t, in[i].d.queue, out[i].d.queue)
		assert.Equal(t, in[i].d.offset, out[i].d.offset)
		assert.True(t, in[i].d.at.Equal(out[i].d.at), "entry %d: %v against %v", i, out[i].d.at, in[i].d.at)
	}

	// Every cut that does not end on an entry's end is refused.
	ends := map[int]bool{dedupGroupHeader: true}
	w := newDedupGroupValue(base, 0)
	for _, e := range in {
		w = appendDedupGroupEntry(w, base.UnixNano(), e.id, e.d)
		ends[len(w)] = true
	}
	for cut := 0; cut < len(v); cut++ {
		_, err := decodeDedupGroup(v[:cut], func([]byte, dedupEntry) {})
		if ends[cut] {
			assert.NoError(t, err, "cut at an entry's end, %d", cut)
		} else {
			assert.ErrorIs(t, err, ErrCorrupt, "cut at %d", cut)
		}
	}
	future := slices.Clone(v)
	future[0] = dedupGroupVersion + 1
	_, err = decodeDedupGroup(future, func([]byte, dedupEntry) {})
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, err, ErrUnsupportedFormat)
	assert.Contains(t, err.Error(), fmt.Sprintf("version %d", dedupGroupVersion+1))
	bad := slices.Clone(w[:dedupGroupHeader])
	bad = appendDedupGroupEntry(bad, 0, "x", dedupEntry{offset: -2})
	_, err = decodeDedupGroup(bad, func([]byte, dedupEntry) {})
	assert.ErrorIs(t, err, ErrCorrupt, "an offset below -1")
}

func dedupKeys(t *testing.T, st Store, prefix []byte) int {
	t.Helper()
	n := 0
	require.NoError(t, st.ScanMeta(prefix, func(_, _ []byte) error { n++; return nil }))
	return n
}

// groupStats decodes every dedup group in st: how many there are, the
// entries they hold, and the longest value.
func groupStats(t *testing.T, st Store) (groups, entries, longest int) {
	t.Helper()
	require.NoError(t, st.ScanMeta(keyDedupGroupPrefix, func(_, v []byte) error {
		n, err := decodeDedupGroup(v, func([]byte, dedupEntry) {})
		groups, entries, longest = groups+1, entries+n, max(longest, len(v))
		return err
	}))
	return groups, entries, longest
}

// TestDedup_GroupsPerWrite: a write of IDs adds a key to the store per
// group of them, each group below the store's value threshold (so it stays
// in Badger's tree, out of its value log), not a key per ID; a reopened
// engine answers every ID as a duplicate with its original offsets.
func TestDedup_GroupsPerWrite(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 2, DedupWindow: time.Hour}))
	send := func(e *Engine, queue, from, n int) AppendResult {
		ms := make([]*Message, n)
		for i := range ms {
			ms[i] = &Message{ID: fmt.Sprintf("id-%d", from+i), Body: []byte("x")}
		}
		res, err := e.Append(ctx, &AppendRequest{Topic: "t", Queue: queue, Messages: ms})
		require.NoError(t, err)
		return res
	}
	send(e, 0, 0, 500)
	send(e, 1, 500, 300)
	send(e, 0, 800, 1)
	groups, entries, longest := groupStats(t, e.st)
	threshold := e.limits.ValueThreshold
	require.Positive(t, threshold)
	assert.Equal(t, 801, entries)
	assert.Less(t, longest, threshold)
	// An entry of "id-N" takes at least 8 bytes (lengths, queue, offset
	// and time at least one each, the ID four): the 500 and the 300 need
	// more than one group each; and no more than their sends' sealed costs
	// allow.
	lower, upper := 1, 0
	for _, n := range []int{500, 300, 1} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("id-%d", 800+i) // the longest IDs of the range
		}
		if n > 1 {
			lower += (n*8 + threshold - dedupGroupHeader - 1) / (threshold - dedupGroupHeader)
		}
		o, _ := dedupCost(ids, threshold)
		upper += o
	}
	assert.GreaterOrEqual(t, groups, lower)
	assert.LessOrEqual(t, groups, upper)
	t.Logf("%d groups (bounds %d to %d), longest %d bytes", groups, lower, upper, longest)
	assert.Zero(t, dedupKeys(t, e.st, keyDedupPrefix), "no key per ID")
	assert.Equal(t, int64(801), e.Stats().DedupIDs)
	require.NoError(t, e.Close())

	e, err = Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	assert.Equal(t, int64(801), e.Stats().DedupIDs)
	assert.Equal(t, uint64(groups), e.dedupSeq, "the sequence goes on past the groups stored")
	for _, c := range []struct{ queue, from, n int }{{0, 0, 500}, {1, 500, 300}, {0, 800, 1}} {
		res := send(e, (c.queue+1)%2, c.from, c.n) // another queue: the window answers first
		assert.True(t, res.Duplicate)
		assert.Equal(t, c.queue, res.Queue)
	}
	res := send(e, 0, 100, 1)
	assert.True(t, res.Duplicate)
	assert.Equal(t, int64(100), res.FirstOffset)
	res = send(e, 0, 801, 2)
	assert.False(t, res.Duplicate)
	assert.Equal(t, groups+1, dedupKeys(t, e.st, keyDedupGroupPrefix))
}

// TestDedup_ReopenAnswersAsBeforeIt: an ID stored twice (its first entry
// expired, or the clock stepped back) is held in two groups; the reopened
// window takes the later-written entry as its newest, whatever the times,
// and holds the entries in the order they were written.
func TestDedup_ReopenAnswersAsBeforeIt(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	tp, ok := e.lookupTopic("t")
	require.True(t, ok)
	t0 := time.Now().Add(-time.Minute).Round(0)
	group := func(seq uint64, base time.Time, entries ...any) store.MetaOp {
		v := newDedupGroupValue(base, 0)
		for i := 0; i < len(entries); i += 2 {
			v = appendDedupGroupEntry(v, base.UnixNano(), entries[i].(string), dedupEntry{offset: int64(entries[i+1].(int)), at: base})
		}
		return store.MetaOp{Key: dedupGroupKey(tp.id, seq), Value: v}
	}
	require.NoError(t, e.st.Write(&store.Batch{Meta: []store.MetaOp{
		group(10, t0, "a", 7, "b", 8),
		group(11, t0.Add(-time.Minute), "a", 9), // written later, dated earlier
	}}))
	require.NoError(t, e.Close())

	e, err = Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	x := e.dedup[tp.id]
	require.NotNil(t, x)
	d, ok := x.get("a")
	require.True(t, ok)
	assert.Equal(t, int64(9), d.offset, "the later-written entry is the newest")
	assert.Equal(t, []dedupGroup{{seq: 10, n: 2}, {seq: 11, n: 1}}, x.groups)
	assert.Equal(t, uint64(12), e.dedupSeq)
	var walked []int64
	for pos, ok := x.oldest(); ok; pos, ok = x.following(pos) {
		d, _, _ := x.entry(pos)
		walked = append(walked, d.offset)
	}
	assert.Equal(t, []int64{7, 8, 9}, walked, "the order they were written in")
	res, err := e.Append(ctx, &AppendRequest{Topic: "t", Messages: []*Message{{ID: "a", Body: []byte("again")}}})
	require.NoError(t, err)
	assert.True(t, res.Duplicate)
	assert.Equal(t, int64(9), res.FirstOffset)
}

// TestDedup_ExpiryDeletesAGroupOnceAllItsEntriesPassed: expiry walks a
// bounded number of entries per batch and deletes a group's key only in
// the batch that walked past its last entry, and only within the batch's
// room; what it cannot do now is left for the next batch.
func TestDedup_ExpiryDeletesAGroupOnceAllItsEntriesPassed(t *testing.T) {
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: time.Minute}))
	tp, ok := e.lookupTopic("t")
	require.True(t, ok)
	q, err := tp.queue(0)
	require.NoError(t, err)
	t0 := time.Now().Add(-time.Hour)
	// Three writes of 3, 5 and 2 IDs, as the writer makes them (the
	// engine's own writer is idle: no send is made).
	next := int64(0)
	for i, n := range []int{3, 5, 2} {
		b := &batchState{now: t0.Add(time.Duration(i) * time.Second)}
		var ids []string
		for j := range n {
			ids = append(ids, fmt.Sprintf("%d-%d", i, j))
		}
		e.dedupRecord(b, &command{kind: cmdAppend, q: q, dedupIDs: ids}, 0, next)
		next += int64(n)
		require.Len(t, b.meta, 1, "one group")
		require.NoError(t, e.st.Write(&store.Batch{Meta: b.meta}))
		e.storeBatch(b)
	}
	x := e.dedup[tp.id]
	require.Equal(t, []dedupGroup{{0, 3}, {1, 5}, {2, 2}}, x.groups)
	require.Equal(t, 3, dedupKeys(t, e.st, keyDedupGroupPrefix))

	defer func(old int) { dedupExpireMax = old }(dedupExpireMax)
	dedupExpireMax = 4
	deletes := func(b *batchState) (seqs []uint64) {
		for _, m := range b.meta {
			require.True(t, m.Delete)
			_, seq, err := parseDedupGroupKey(m.Key)
			require.NoError(t, err)
			seqs = append(seqs, seq)
		}
		return seqs
	}
	run := func(ops int) (*batchState, bool) {
		b := &batchState{now: time.Now()}
		more := e.planExpiry(b, ops, 1<<20)
		require.NoError(t, e.st.Write(&store.Batch{Meta: b.meta}))
		e.storeBatch(b)
		return b, more
	}
	b, more := run(100) // walks 3 of the first group and 1 of the second
	assert.True(t, more)
	assert.Equal(t, []uint64{0}, deletes(b))
	assert.Len(t, b.expired, 4)
	assert.Equal(t, 1, x.passed)
	b, more = run(0) // walks the second group's other 4, but has no room to delete it
	assert.True(t, more)
	assert.Empty(t, deletes(b))
	assert.Len(t, b.expired, 4)
	assert.Equal(t, []dedupGroup{{1, 5}, {2, 2}}, x.groups)
	assert.Equal(t, 5, x.passed)
	b, more = run(100) // the second group's key now; the third group's 2 entries
	assert.False(t, more)
	assert.Equal(t, []uint64{1, 2}, deletes(b))
	assert.Empty(t, x.groups)
	assert.Zero(t, x.passed)
	assert.Zero(t, x.size())
	assert.Zero(t, dedupKeys(t, e.st, keyDedupGroupPrefix))
}

// failNthWrite is a store that refuses its nth write from now (n counts
// down) and keeps its data over the engine's Close.
type failNthWrite struct {
	*store.Memory
	n *int
}

var errInjected = errors.New("injected write failure")

func (f failNthWrite) Write(b *store.Batch) error {
	*f.n--
	if *f.n == 0 {
		return errInjected
	}
	return f.Memory.Write(b)
}

func (failNthWrite) Close() error { return nil }

func (failNthWrite) Limits() store.Limits { return store.Limits{MaxEntries: 100, MaxBytes: 1 << 20} }

// TestDedup_MigratesLegacyEntries: a store written before groups holds a
// key per ID. Open moves them into groups, in the order of their times,
// a write at a time; a write that fails (a read-only store) leaves each
// entry in one format or the other, the engine opens with the rest held in
// memory, and the next Open finishes the move. Every ID is then
// answered with its original place, and entries of a topic that is gone
// are deleted.
func TestDedup_MigratesLegacyEntries(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	n := 0 // no failure yet
	st := failNthWrite{Memory: mem, n: &n}
	e, err := Open("", &Options{Store: st})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	tp, ok := e.lookupTopic("t")
	require.True(t, ok)
	// 250 entries; ID order is the reverse of time order.
	base := time.Now().Add(-10 * time.Minute).Round(0)
	var meta []store.MetaOp
	for i := range 250 {
		d := dedupEntry{queue: 0, offset: int64(i), at: base.Add(time.Duration(250-i) * time.Millisecond)}
		meta = append(meta, store.MetaOp{Key: dedupMetaKey(tp.id, fmt.Sprintf("id-%03d", i)), Value: dedupValue(d)})
	}
	meta = append(meta, store.MetaOp{Key: dedupMetaKey(tp.id+100, "gone"), Value: dedupValue(dedupEntry{at: base})})
	for len(meta) > 0 {
		k := min(len(meta), 90)
		require.NoError(t, mem.Write(&store.Batch{Meta: meta[:k]}))
		meta = meta[k:]
	}
	require.NoError(t, e.Close())

	check := func(e *Engine) {
		x := e.dedup[tp.id]
		require.Equal(t, 250, x.size())
		var prev time.Time
		for pos, ok := x.oldest(); ok; pos, ok = x.following(pos) {
			d, _, _ := x.entry(pos)
			assert.False(t, d.at.Before(prev), "oldest first")
			prev = d.at
		}
		for i := range 250 {
			res, err := e.Append(ctx, &AppendRequest{Topic: "t", Messages: []*Message{{ID: fmt.Sprintf("id-%03d", i), Body: []byte("again")}}})
			require.NoError(t, err)
			require.True(t, res.Duplicate, "id-%03d", i)
			require.Equal(t, int64(i), res.FirstOffset)
		}
	}
	n = 3 // the stale delete, the first group, then a failure
	e, err = Open("", &Options{Store: st})
	require.NoError(t, err, "a write refused while moving: the engine still opens")
	legacy, groups := dedupKeys(t, mem, keyDedupPrefix), dedupKeys(t, mem, keyDedupGroupPrefix)
	assert.Equal(t, 1, groups, "one write moved")
	assert.Equal(t, 250, legacy+99*groups, "every entry in one format or the other")
	x := e.dedup[tp.id]
	require.Equal(t, []dedupGroup{{seq: 0, n: 99}, {seq: dedupNoKey, n: 151}}, x.groups, "the rest held in memory, with no key of their own")
	b := &batchState{now: base.Add(2 * time.Hour)}
	assert.False(t, e.planExpiry(b, 100, 1<<20))
	assert.Len(t, b.expired, 250)
	assert.Len(t, b.meta, 1, "only the moved group has a key to delete") // planned, not committed
	check(e)
	require.NoError(t, e.Close())

	n = 0
	e, err = Open("", &Options{Store: st})
	require.NoError(t, err)
	assert.Zero(t, dedupKeys(t, mem, keyDedupPrefix), "all moved")
	assert.Equal(t, 3, dedupKeys(t, mem, keyDedupGroupPrefix), "99, then 99 and 52 entries")
	check(e)
	require.NoError(t, e.Close())
	e, err = Open("", &Options{Store: st})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	check(e)
}

// TestDedup_GroupCostBoundsWhatIsWritten: for random IDs, commands and
// value thresholds (or, without one, value limits), the groups a batch
// writes hold every ID in order, each group below the limit unless one
// entry alone reaches it, and cost no more operations and bytes than the
// commands' dedupCost.
func TestDedup_GroupCostBoundsWhatIsWritten(t *testing.T) {
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopicWith(context.Background(), "t", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	tp, ok := e.lookupTopic("t")
	require.True(t, ok)
	q, err := tp.queue(0)
	require.NoError(t, err)
	defer func(l store.Limits) { e.limits = l }(e.limits)
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 300 {
		// The writer is idle: no send is made.
		e.limits.ValueThreshold = []int{0, 5, dedupGroupHeader + 1, 64, 1024, 4096}[rng.IntN(6)]
		e.limits.MaxValueSize = []int{0, 512, 1 << 20}[rng.IntN(3)] // the limit where there is no threshold
		threshold := dedupGroupLimit(e.limits)
		b := &batchState{now: time.Now()}
		var want []string
		ops, bytes := 0, 0
		offset := int64(0)
		for range 1 + rng.IntN(5) {
			ids := make([]string, 1+rng.IntN(300))
			for i := range ids {
				n := rng.IntN(40)
				if rng.IntN(50) == 0 {
					n = rng.IntN(2 * MaxIDBytes)
				}
				ids[i] = fmt.Sprintf("%d-%d-%s", trial, len(want)+i, strings.Repeat("x", n))
				if len(ids[i]) <= MaxIDBytes {
					want = append(want, ids[i])
				}
			}
			o, n := dedupCost(ids, threshold)
			ops, bytes = ops+o, bytes+n
			e.dedupRecord(b, &command{kind: cmdAppend, q: q, dedupIDs: ids}, 0, offset)
			offset += int64(len(ids)) << uint(rng.IntN(30)) // offsets of every varint length
		}
		var got []string
		for _, m := range b.meta {
			n, err := decodeDedupGroup(m.Value, func(id []byte, _ dedupEntry) { got = append(got, string(id)) })
			require.NoError(t, err)
			if threshold > dedupGroupHeader && n > 1 {
				require.Less(t, len(m.Value), threshold, "trial %d", trial)
			}
		}
		require.Equal(t, want, got, "trial %d", trial)
		gotOps, gotBytes := e.limits.Cost(&store.Batch{Meta: b.meta})
		require.LessOrEqual(t, gotOps, ops, "trial %d, threshold %d", trial, threshold)
		require.LessOrEqual(t, gotBytes, bytes, "trial %d, threshold %d", trial, threshold)
	}
}

// TestDedup_MigratedGroupsStayBelowTheThreshold: entries of the former
// format are moved into groups below the store's value threshold too.
func TestDedup_MigratedGroupsStayBelowTheThreshold(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	tp, ok := e.lookupTopic("t")
	require.True(t, ok)
	threshold := e.limits.ValueThreshold
	require.Positive(t, threshold)
	at := time.Now().Round(0)
	var meta []store.MetaOp
	for i := range 1000 {
		meta = append(meta, store.MetaOp{Key: dedupMetaKey(tp.id, fmt.Sprintf("%036d", i)), Value: dedupValue(dedupEntry{offset: int64(i), at: at})})
	}
	require.NoError(t, e.st.Write(&store.Batch{Meta: meta}))
	require.NoError(t, e.Close())

	e, err = Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	groups, entries, longest := groupStats(t, e.st)
	assert.Equal(t, 1000, entries)
	assert.Less(t, longest, threshold)
	assert.GreaterOrEqual(t, groups, 1000*40/threshold, "an entry takes at least 40 bytes")
	assert.Zero(t, dedupKeys(t, e.st, keyDedupPrefix))
	assert.Equal(t, int64(1000), e.Stats().DedupIDs)
}

// TestDedup_GroupsFitAStoreWithoutAValueLog: Badger in memory keeps every
// value inline and refuses one above its threshold, so it reports no
// value threshold, only a largest value; groups stay below that, and a
// send whose IDs fill more than one such value is stored (found by
// review: it failed, with every send packed beside it).
func TestDedup_GroupsFitAStoreWithoutAValueLog(t *testing.T) {
	st, err := store.OpenBadger("", &store.BadgerOptions{InMemory: true, MemTableSize: 64 << 20})
	require.NoError(t, err)
	e, err := Open("", &Options{Store: st})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.Zero(t, e.limits.ValueThreshold)
	require.Positive(t, e.limits.MaxValueSize)
	ctx := context.Background()
	require.NoError(t, e.CreateTopicWith(ctx, "d", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	appendIDs(t, e, "d", 4000, "%0300d")
	groups, entries, longest := groupStats(t, e.st)
	assert.Equal(t, 4000, entries)
	assert.Greater(t, groups, 1)
	assert.Less(t, longest, e.limits.MaxValueSize)
}

// TestDedup_SmallValueThresholdStillTakesLargeSends: with a value
// threshold so small that each ID needs a group of its own, a send's
// sealed cost is a group per ID, not the general bound's two and more
// (found by review: 3,000 IDs were refused that a key per ID had taken).
func TestDedup_SmallValueThresholdStillTakesLargeSends(t *testing.T) {
	dir := t.TempDir()
	o := store.DefaultBadgerOptions()
	o.ValueThreshold = 64
	e, err := Open(dir, &Options{Badger: &o})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.Equal(t, 64, e.limits.ValueThreshold)
	ctx := context.Background()
	require.NoError(t, e.CreateTopicWith(ctx, "d", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	appendIDs(t, e, "d", 3000, "%036d")
	groups, entries, longest := groupStats(t, e.st)
	assert.Equal(t, 3000, entries)
	assert.Equal(t, 3000, groups, "an entry of a 36-byte ID and two more fill 64 bytes")
	assert.Less(t, longest, 64)
}

// TestDedup_DamagedOldFormatEntriesAreDropped: an entry of the former
// format that no engine could have written (a queue above 2^31-1, an
// offset below -1) is deleted at Open, not moved into a group that every
// later Open would refuse (found by review).
func TestDedup_DamagedOldFormatEntriesAreDropped(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	tp, ok := e.lookupTopic("t")
	require.True(t, ok)
	at := time.Now().Round(0)
	require.NoError(t, e.st.Write(&store.Batch{Meta: []store.MetaOp{
		{Key: dedupMetaKey(tp.id, "good"), Value: dedupValue(dedupEntry{offset: 4, at: at})},
		{Key: dedupMetaKey(tp.id, "queue"), Value: dedupValue(dedupEntry{queue: -1, offset: 5, at: at})},
		{Key: dedupMetaKey(tp.id, "offset"), Value: dedupValue(dedupEntry{offset: -7, at: at})},
	}}))
	require.NoError(t, e.Close())
	for range 2 {
		e, err = Open(dir, nil)
		require.NoError(t, err)
		_, entries, _ := groupStats(t, e.st)
		assert.Equal(t, 1, entries)
		assert.Zero(t, dedupKeys(t, e.st, keyDedupPrefix))
		res, err := e.Append(ctx, &AppendRequest{Topic: "t", Messages: []*Message{{ID: "good", Body: []byte("x")}}})
		require.NoError(t, err)
		assert.True(t, res.Duplicate)
		assert.Equal(t, int64(4), res.FirstOffset)
		require.NoError(t, e.Close())
	}
}

// appendIDs appends n messages to topic in one write, message i with the
// ID format gives for i.
func appendIDs(t *testing.T, e *Engine, topic string, n int, format string) {
	t.Helper()
	ms := make([]*Message, n)
	for i := range ms {
		ms[i] = &Message{ID: fmt.Sprintf(format, i), Body: []byte("x")}
	}
	_, err := e.Append(context.Background(), &AppendRequest{Topic: topic, Messages: ms})
	require.NoError(t, err)
}

package equeue

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/equeue-go/equeue/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dedupModel is what a dedup index must answer: each ID's newest entry,
// and, in the order they were recorded, the entries expiry walks.
type dedupModel struct {
	newest map[string]int // ID -> index in log of its newest entry
	log    []dedupModelEntry
	head   int
}

type dedupModelEntry struct {
	id string
	d  dedupEntry
}

func (m *dedupModel) add(id string, d dedupEntry) {
	m.newest[id] = len(m.log)
	m.log = append(m.log, dedupModelEntry{id, d})
}

// expireIndex runs what planExpiry and commitDedup do to one index: walk
// from the oldest entry while entries are older than cutoff, at most room
// current ones, skipping the IDs in again (recorded again in the same
// batch, whose new entries are added), and returns the IDs removed.
func expireIndex(x *dedupIndex, cutoff time.Time, room int, again map[string]dedupEntry) []string {
	var removed []dedupPut
	pos, ok := x.oldest()
	passed := false
	for ok {
		d, id, _ := x.entry(pos)
		if !d.at.Before(cutoff) {
			break
		}
		if x.current(pos, id) {
			if _, a := again[string(id)]; !a {
				if room == 0 {
					break
				}
				room--
				removed = append(removed, dedupPut{idx: x, id: string(id), d: d, pos: pos})
			}
		}
		pos, ok = x.following(pos)
		passed = true
	}
	if passed && !ok {
		pos = x.tail
	}
	var ids []string
	for _, p := range removed {
		x.remove(p.pos, p.id)
		ids = append(ids, p.id)
	}
	for _, id := range slices.Sorted(maps.Keys(again)) {
		x.add(id, again[id])
	}
	if passed {
		x.advance(pos)
	}
	return ids
}

func (m *dedupModel) expire(cutoff time.Time, room int, again map[string]dedupEntry) []string {
	var ids []string
	for m.head < len(m.log) && m.log[m.head].d.at.Before(cutoff) {
		e := m.log[m.head]
		if m.newest[e.id] == m.head {
			if _, a := again[e.id]; !a {
				if room == 0 {
					break
				}
				room--
				ids = append(ids, e.id)
				delete(m.newest, e.id)
			}
		}
		m.head++
	}
	for _, id := range slices.Sorted(maps.Keys(again)) {
		m.add(id, again[id])
	}
	return ids
}

// short shortens the long IDs of a failure's message.
func short(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if len(id) > 24 {
			id = fmt.Sprintf("%s...(%d bytes)", id[:8], len(id))
		}
		out[i] = id
	}
	return out
}

// TestDedupIndex_Model drives the index and a plain model with the same
// random records, lookups and expiries (times that mostly rise and
// sometimes step back, as a wall clock may; IDs of every length, long ones
// that need a chunk of their own; expiry cut short by a batch's room, and
// IDs recorded again in the expiring batch), with the process's hash and
// with one under which IDs collide all the time.
func TestDedupIndex_Model(t *testing.T) {
	for _, weak := range []bool{false, true} {
		t.Run(fmt.Sprintf("weak-hash=%v", weak), func(t *testing.T) {
			for seed := range uint64(20) {
				rng := rand.New(rand.NewPCG(seed, 7))
				x := newDedupIndex(1, time.Hour)
				x.weak = weak
				m := &dedupModel{newest: map[string]int{}}
				now := time.Unix(1_700_000_000, 0)
				id := func() string {
					n := rng.IntN(400)
					switch rng.IntN(20) {
					case 0:
						return ""
					case 1:
						return strings.Repeat("x", 5000+rng.IntN(20000)) + fmt.Sprint(rng.IntN(3))
					}
					return fmt.Sprintf("%c-%d", 'a'+rune(n%4), n)
				}
				for step := range 3000 {
					if rng.IntN(10) == 0 {
						now = now.Add(-time.Duration(rng.IntN(1000)) * time.Millisecond)
					} else {
						now = now.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
					}
					switch r := rng.IntN(10); {
					case r < 5:
						k := id()
						d := dedupEntry{queue: rng.IntN(8), offset: rng.Int64N(1 << 40), at: now}
						x.add(k, d)
						m.add(k, d)
					case r < 8:
						k := id()
						got, ok := x.get(k)
						i, want := m.newest[k]
						require.Equal(t, want, ok, "step %d id %q", step, short([]string{k}))
						if ok {
							w := m.log[i].d
							require.Equal(t, w.queue, got.queue)
							require.Equal(t, w.offset, got.offset)
							require.True(t, w.at.Equal(got.at))
						}
					default:
						cutoff := now.Add(-time.Duration(rng.IntN(600)) * time.Second)
						room := rng.IntN(50)
						again := map[string]dedupEntry{}
						for range rng.IntN(3) {
							again[id()] = dedupEntry{queue: 1, offset: int64(step), at: now}
						}
						require.Equal(t, short(m.expire(cutoff, room, again)), short(expireIndex(x, cutoff, room, again)), "step %d", step)
					}
					require.Equal(t, len(m.newest), x.size(), "step %d", step)
				}
				// Everything expires: the index keeps nothing.
				for x.size() > 0 {
					expireIndex(x, now.Add(time.Hour), 100, nil)
				}
				assert.Nil(t, x.chunks)
				if !weak {
					assert.Empty(t, x.more, "no collisions of 64-bit hashes among a few hundred IDs")
				}
			}
		})
	}
}

// TestDedupIndex_MemoryPerID: an ID in the window costs its length and a
// few dozen bytes (the map entry of one per ID, holding the whole string,
// cost about 300); once a burst expired, its room is given back.
func TestDedupIndex_MemoryPerID(t *testing.T) {
	const n = 200_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i) // 36 bytes, as a UUID
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	x := newDedupIndex(1, time.Minute)
	at := time.Unix(1_700_000_000, 0)
	for i, id := range ids {
		x.add(id, dedupEntry{queue: i % 4, offset: int64(i), at: at.Add(time.Duration(i) * time.Microsecond)})
	}
	perID := float64(heap()-before) / n
	t.Logf("%.1f bytes per 36-byte ID", perID)
	assert.Less(t, perID, 36.0+96, "bytes per ID in the index")
	runtime.KeepAlive(x)

	// All but the last 1% expire.
	for x.size() > n/100 {
		expireIndex(x, at.Add(time.Duration(n-n/100)*time.Microsecond), 10_000, nil)
	}
	left := float64(heap() - before)
	t.Logf("%.0f bytes held with %d IDs left", left, x.size())
	// What is left: those IDs, and the log's newest chunk (up to 1 MiB).
	assert.Less(t, left, float64(n/100)*(36+96)*2+dedupChunkMax, "the expired IDs' room is given back")
	for _, id := range ids[n-n/100:] {
		_, ok := x.get(id)
		require.True(t, ok, id)
	}
	_, ok := x.get(ids[0])
	assert.False(t, ok)
	runtime.KeepAlive(x)
}

// TestDedup_ReopenLoadsTheWindowInTimeOrder: the store hands the index
// over in ID order; the reopened index must walk it in time order, or
// one recent entry at its head would hold every older one past its window
// (in memory, and its key in the store) for another window.
func TestDedup_ReopenLoadsTheWindowInTimeOrder(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	tp, ok := e.lookupTopic("t")
	require.True(t, ok)
	// IDs a..z, a the newest: ID order is the reverse of time order.
	base := time.Now().Add(-2 * time.Hour)
	var meta []store.MetaOp
	for i := range 26 {
		id := string(rune('a' + i))
		d := dedupEntry{queue: 0, offset: int64(i), at: base.Add(time.Duration(26-i) * time.Minute)}
		meta = append(meta, store.MetaOp{Key: dedupMetaKey(tp.id, id), Value: dedupValue(d)})
	}
	require.NoError(t, e.st.Write(&store.Batch{Meta: meta}))
	require.NoError(t, e.Close())

	e, err = Open(dir, nil)
	require.NoError(t, err)
	defer e.Close()
	x := e.dedup[tp.id]
	require.NotNil(t, x)
	require.Equal(t, 26, x.size())
	var walked []string
	for pos, ok := x.oldest(); ok; pos, ok = x.following(pos) {
		_, id, _ := x.entry(pos)
		walked = append(walked, string(id))
	}
	require.Len(t, walked, 26)
	for i, id := range walked {
		assert.Equal(t, string(rune('z'-i)), id, "oldest first")
	}
	// An hour and a half after base every entry (1 to 26 minutes after
	// it) is more than an hour old.
	b := &batchState{now: base.Add(90 * time.Minute)}
	assert.False(t, e.planExpiry(b, 1000, 1<<20))
	assert.Len(t, b.expired, 26, "every entry is more than an hour old")
	b = &batchState{now: base.Add(time.Hour + 13*time.Minute + 30*time.Second)}
	assert.False(t, e.planExpiry(b, 1000, 1<<20))
	var expired []string
	for _, p := range b.expired {
		expired = append(expired, p.id)
	}
	assert.Equal(t, []string{"z", "y", "x", "w", "v", "u", "t", "s", "r", "q", "p", "o", "n"}, expired,
		"the entries more than an hour old at 1h13m30s after base: 1 to 13 minutes after it")
}

// TestDedup_DeletedTopicIndexKeptWhileABatchRecordsIntoIt: a send that
// passed its topic's deletion check just before the topic was deleted
// records into the topic's dedup index in the same batch whose expiry
// finds that index empty. The index must not be dropped under it (the
// entry would be counted in Stats for good): it is dropped once a later
// batch expired the entry (found by review).
func TestDedup_DeletedTopicIndexKeptWhileABatchRecordsIntoIt(t *testing.T) {
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	tp, ok := e.lookupTopic("t")
	require.True(t, ok)
	q, err := tp.queue(0)
	require.NoError(t, err)
	// What the writer goroutine does (the engine's own writer is idle: no
	// send is made).
	func() {
		x := e.dedupFor(tp)
		require.Zero(t, x.size())
		tp.deleted.Store(true) // the deletion lands between apply's check and planExpiry
		b := &batchState{now: time.Now()}
		e.dedupRecord(b, &command{kind: cmdAppend, q: q, dedupIDs: []string{"late"}}, 0, 0)
		e.planExpiry(b, 100, 1<<20)
		e.storeBatch(b)
		require.Same(t, x, e.dedup[tp.id], "the index the batch recorded into is kept")
		require.Equal(t, int64(1), e.stats.dedup.Load())

		b = &batchState{now: time.Now()}
		e.planExpiry(b, 100, 1<<20) // the deleted topic's entry expires
		e.storeBatch(b)
		b = &batchState{now: time.Now()}
		e.planExpiry(b, 100, 1<<20) // and the empty index goes
		e.storeBatch(b)
		require.Nil(t, e.dedup[tp.id])
		require.Zero(t, e.stats.dedup.Load())
	}()
}

// ends gives, per queue, one past the highest offset any entry of the log
// holds: replaced entries count, delayed ones (offset -1) do not, and an
// empty or fully expired index proves nothing.
func TestDedupIndex_Ends(t *testing.T) {
	x := newDedupIndex(1, time.Hour)
	assert.Empty(t, x.ends())
	now := time.Now()
	x.add("a", dedupEntry{queue: 0, offset: 7, at: now})
	x.add("b", dedupEntry{queue: 1, offset: 2, at: now})
	x.add("a", dedupEntry{queue: 0, offset: 3, at: now}) // replaces a's entry at 7
	x.add("d", dedupEntry{queue: 2, offset: -1, at: now})
	for i := range 2000 { // over several chunks
		x.add(fmt.Sprintf("id-%04d", i), dedupEntry{queue: 1, offset: int64(10 + i), at: now})
	}
	assert.Equal(t, map[int]int64{0: 8, 1: 2010}, x.ends())

	removed := expireIndex(x, now.Add(time.Second), 1<<30, nil)
	require.Len(t, removed, 2003)
	assert.Empty(t, x.ends(), "an index expiry passed holds no entry")
}

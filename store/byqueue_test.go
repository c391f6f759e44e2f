package store

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestByQueueOrdersAsAStableSort: byQueue, which buckets the usual write
// instead of sorting it, orders every write as a stable sort by queue and
// offset does: interleaved queues, repeated offsets (the later must stay
// later), offsets out of order, and more queues than it buckets.
func TestByQueueOrdersAsAStableSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		queues := rapid.IntRange(1, 2*maxQueueBuckets).Draw(t, "queues")
		n := rapid.IntRange(0, 200).Draw(t, "n")
		ordered := rapid.Bool().Draw(t, "ordered")
		next := make([]uint64, queues)
		entries := make([]Entry, n)
		for i := range entries {
			q := rapid.IntRange(0, queues-1).Draw(t, "q")
			off := next[q]
			if ordered {
				next[q] += uint64(rapid.IntRange(0, 2).Draw(t, "step")) // 0: the same offset again
			} else {
				off = uint64(rapid.IntRange(0, 20).Draw(t, "off"))
			}
			// Topic and queue both vary; the value tells entries apart.
			entries[i] = Entry{Queue: QueueID{Topic: uint32(q % 3), Queue: uint32(q)}, Offset: off, Value: []byte{byte(i), byte(i >> 8)}}
		}
		input := slices.Clone(entries)
		want := sortEntries(slices.Clone(entries))
		got := byQueue(entries, make([]Entry, 0, 3))
		require.Equal(t, input, entries, "the input is left as it was")
		require.Equal(t, want, got)
	})
}

// BenchmarkByQueue orders a group commit of 64 records over 4 queues, as
// the engine writes it, by bucketing (byQueue) and by a stable sort.
func BenchmarkByQueue(b *testing.B) {
	entries := make([]Entry, 64)
	for i := range entries {
		entries[i] = Entry{Queue: QueueID{Topic: 1, Queue: uint32(i % 4)}, Offset: uint64(i / 4)}
	}
	dst := make([]Entry, 0, len(entries))
	b.Run("bucket", func(b *testing.B) {
		for b.Loop() {
			dst = byQueue(entries, dst[:0])
		}
	})
	b.Run("stable-sort", func(b *testing.B) {
		for b.Loop() {
			dst = sortEntries(append(dst[:0], entries...))
		}
	})
}

// TestEncodeSegmentOfEntries: a segment encoded from entries is the one
// encoded from their values.
func TestEncodeSegmentOfEntries(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		values := rapid.SliceOf(rapid.SliceOf(rapid.Byte())).Draw(t, "values")
		entries := make([]Entry, len(values))
		for i, v := range values {
			entries[i] = Entry{Offset: uint64(i), Value: v}
		}
		prefix := []byte("kept")
		require.Equal(t, encodeSegment(slices.Clone(prefix), values), encodeSegmentOf(slices.Clone(prefix), entries))
	})
}

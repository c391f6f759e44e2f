package equeue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDedup_DelayedPlaceRoundTrips: a delayed message's place (its send's
// first delay-log slot and its index in the send) comes back from its
// entry's offset, through a group too, which is then of version 2; an
// index that does not fit gives -1, an entry without a place.
func TestDedup_DelayedPlaceRoundTrips(t *testing.T) {
	for _, c := range []struct {
		slot int64
		i    int
	}{{0, 0}, {0, 1}, {7, 3}, {delayPlaceSendMask, 1<<delayPlaceIndexBits - 1}} {
		off := delayedOffset(c.slot, c.i)
		require.Less(t, off, int64(-1))
		send, pos, ok := entryPlace(dedupEntry{offset: off})
		require.True(t, ok)
		assert.Equal(t, c.slot, send)
		assert.Equal(t, int64(c.i), pos)
	}
	assert.Equal(t, int64(-1), delayedOffset(0, 1<<delayPlaceIndexBits))
	_, _, ok := entryPlace(dedupEntry{offset: -1})
	assert.False(t, ok)
	send, pos, ok := entryPlace(dedupEntry{offset: 5})
	assert.Equal(t, []any{int64(-1), int64(5), true}, []any{send, pos, ok})

	base := time.Unix(1_700_000_000, 0)
	v := newDedupGroupValue(base, 0)
	require.Equal(t, byte(dedupGroupVersion1), v[0], "a group without places is read by engines before them")
	v = appendDedupGroupEntry(v, base.UnixNano(), "x", dedupEntry{queue: 1, offset: delayedOffset(9, 2), at: base})
	_, err := decodeDedupGroup(v, func([]byte, dedupEntry) {})
	assert.ErrorIs(t, err, ErrCorrupt, "a place in a group of version 1")
	v[0] = dedupGroupVersion
	var got dedupEntry
	n, err := decodeDedupGroup(v, func(_ []byte, d dedupEntry) { got = d })
	require.NoError(t, err)
	require.Equal(t, 1, n)
	assert.Equal(t, delayedOffset(9, 2), got.offset)
}

package equeue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pqWith(offs ...int64) *processQueue {
	p := newProcessQueue(OffsetCommit{Offset: offs[0]})
	msgs := make([]*Message, len(offs))
	for i, o := range offs {
		msgs[i] = &Message{Offset: o}
	}
	p.add(msgs, offs[len(offs)-1]+1)
	return p
}

func TestProcessQueue_StopAfterGapsAdmitsOnlyGaps(t *testing.T) {
	p := pqWith(10, 11, 12, 13, 14, 15)
	require.True(t, p.begin(12))
	p.end(12, true) // finished out of order
	require.True(t, p.begin(13))
	p.stopAfterGaps() // fence: one past 13, the highest running or finished

	assert.Equal(t, int64(10), p.committable())
	gaps, running := p.gaps()
	require.Len(t, gaps, 2)
	assert.Equal(t, []int64{10, 11}, []int64{gaps[0].Offset, gaps[1].Offset})
	assert.True(t, running, "13 is running")
	again, _ := p.gaps()
	assert.Empty(t, again, "a gap is returned once")

	assert.False(t, p.begin(14), "above the fence nothing starts")
	assert.True(t, p.begin(10))
	assert.False(t, p.begin(10), "already running")
	p.end(10, true)
	assert.True(t, p.begin(11))
	p.end(11, true)
	p.end(13, true)
	_, running = p.gaps()
	assert.False(t, running)
	assert.Equal(t, int64(14), p.committable(), "the commit passes every handled message and nothing else")
}

func TestProcessQueue_StopAdmitsNothing(t *testing.T) {
	p := pqWith(0, 1, 2)
	require.True(t, p.begin(1))
	p.end(1, true)
	p.stop()
	assert.False(t, p.begin(0))
	gaps, running := p.gaps()
	assert.Empty(t, gaps)
	assert.False(t, running)
}

func TestProcessQueue_StopAfterGapsWithNothingStarted(t *testing.T) {
	p := pqWith(5, 6)
	p.stopAfterGaps()
	assert.False(t, p.begin(5), "nothing started: the next owner gets everything")
	gaps, running := p.gaps()
	assert.Empty(t, gaps)
	assert.False(t, running)
	assert.Equal(t, int64(5), p.committable())
}

// TestProcessQueue_OverdueNeverEarly: a handler's start is not timed;
// overdue reports it only after it has seen it running once, so it never
// reports a handler that may have run less than the timeout.
func TestProcessQueue_OverdueNeverEarly(t *testing.T) {
	p := pqWith(0, 1, 2)
	require.True(t, p.begin(0))
	require.True(t, p.begin(1))
	assert.Empty(t, p.overdue(-1), "first sight: only the time is recorded")
	p.end(1, true)
	got := p.overdue(-1)
	require.Len(t, got, 1, "seen running before: overdue")
	assert.Equal(t, int64(0), got[0].Offset)
	assert.Empty(t, p.overdue(time.Hour), "not for a longer timeout")

	p.end(0, false) // retried in place: a new run starts untimed
	require.True(t, p.begin(0))
	assert.Empty(t, p.overdue(-1), "a new run is first seen again")
	assert.Len(t, p.overdue(-1), 1)
}

// TestProcessQueue_FindWithGaps: offsets skipped by a filter leave gaps;
// find still locates every held offset and nothing else.
func TestProcessQueue_FindWithGaps(t *testing.T) {
	p := pqWith(3, 4, 7, 8, 9, 20)
	for _, off := range []int64{3, 4, 7, 8, 9, 20} {
		i := p.find(off)
		require.GreaterOrEqual(t, i, 0, "offset %d", off)
		assert.Equal(t, off, p.entries[i].off)
	}
	for _, off := range []int64{-1, 0, 2, 5, 6, 10, 19, 21, 1 << 62} {
		assert.Equal(t, -1, p.find(off), "offset %d", off)
	}
	require.True(t, p.begin(3))
	p.end(3, true) // head moves past 3
	assert.Equal(t, -1, p.find(3), "finished and behind the head")
	assert.GreaterOrEqual(t, p.find(4), 0)
}

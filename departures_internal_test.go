package equeue

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDepartures_KeptForTheirTimeAndBounded: a leave is remembered for its
// keep time and no longer, for its group, member ID and incarnation only;
// a leave again renews it; at most maxDepartures are kept, the oldest
// dropped first; leaves without an incarnation or with invalid names are
// not kept.
func TestDepartures_KeptForTheirTimeAndBounded(t *testing.T) {
	var d departures
	const keep = time.Minute
	t0 := time.Unix(1000, 0)
	leave := func(g, m, inc string, at time.Time) {
		d.add(&LeaveRequest{Group: g, Member: m, Incarnation: inc}, at, keep)
	}
	left := func(g, m, inc string, at time.Time) bool {
		return d.left(&JoinRequest{Group: g, Member: m, Incarnation: inc}, at, keep)
	}

	leave("g", "w", "one", t0)
	assert.True(t, left("g", "w", "one", t0.Add(keep)))
	assert.False(t, left("g", "w", "one", t0.Add(keep+time.Nanosecond)), "past its keep time")
	assert.False(t, left("g", "w", "two", t0), "another incarnation")
	assert.False(t, left("h", "w", "one", t0), "another group")
	assert.False(t, left("g", "v", "one", t0), "another member ID")
	assert.False(t, left("g", "w", "", t0), "a join without an incarnation")

	leave("g", "w", "one", t0.Add(keep)) // left again: renewed
	leave("g", "x", "one", t0.Add(keep+time.Second))
	assert.True(t, left("g", "w", "one", t0.Add(2*keep)), "the renewed leave outlives its first entry's pruning")

	leave("g", "w", "", t0)
	leave("", "w", "one", t0)
	leave("g", "", "one", t0)
	leave("g", "w", string(make([]byte, maxIncarnationLen+1)), t0)
	assert.Len(t, d.at, 2, "leaves without an incarnation or with invalid names are not kept")

	now := t0.Add(3 * keep)
	for i := range maxDepartures + 10 {
		leave("g", fmt.Sprintf("m%d", i), "one", now)
	}
	require.LessOrEqual(t, len(d.order), maxDepartures)
	assert.Len(t, d.at, maxDepartures, "expired leaves are gone, and the newest fill the bound")
	assert.False(t, left("g", "m0", "one", now), "the oldest is dropped first")
	assert.True(t, left("g", fmt.Sprintf("m%d", maxDepartures+9), "one", now))
}

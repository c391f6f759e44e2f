package slab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A slab's arrays grow with the values taken, never past the batch: a
// batch that claims many values and yields few costs one first array; one
// that yields them all costs a few arrays, holding at most twice the
// values and first more; a default pull's batch costs one.
func TestSlab_GrowsWithTheValuesTaken(t *testing.T) {
	for _, tc := range []struct{ claimed, taken, arrays int }{
		{1 << 30, 1, 1}, {1 << 30, 100, 3}, {1, 1, 1}, {0, 3, 3}, {32, 32, 1}, {5, 5, 1},
		{1024, 1024, 6}, {1000, 999, 6},
	} {
		s := New[[4]int64](tc.claimed)
		seen := map[*[4]int64]bool{}
		arrays, held := 0, 0
		for range tc.taken {
			fresh := len(s.free) == 0
			v := s.Take()
			if fresh {
				arrays++
				held += len(s.free) + 1
			}
			require.False(t, seen[v], "a value handed out twice")
			require.Equal(t, [4]int64{}, *v)
			v[0] = 1
			seen[v] = true
		}
		assert.LessOrEqual(t, held, 2*tc.taken+first, "claimed %d, taken %d", tc.claimed, tc.taken)
		assert.LessOrEqual(t, held, max(tc.claimed, tc.taken), "claimed %d, taken %d", tc.claimed, tc.taken)
		assert.Equal(t, tc.arrays, arrays, "claimed %d, taken %d", tc.claimed, tc.taken)
	}
}

package equeue

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// offsetRuns holds exactly the offsets added, at or above the low
// watermark, as sorted, disjoint, non-adjacent runs: checked against a
// plain set.
func TestOffsetRuns_Model(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s offsetRuns
	model := map[int64]bool{}
	var min int64
	for range 5000 {
		if r.IntN(50) == 0 {
			min += int64(r.IntN(5))
			for off := range model {
				if off < min {
					delete(model, off)
				}
			}
		}
		off := min + int64(r.IntN(64))
		require.Equal(t, !model[off], s.add(off, min), "add(%d, %d)", off, min)
		model[off] = true
		require.Zero(t, s.below(min), "runs below the low watermark are dropped")
		n := 0
		for i, run := range s.runs {
			require.Less(t, run.from, run.to)
			if i > 0 {
				require.Less(t, s.runs[i-1].to, run.from, "runs sorted, disjoint, not adjacent: %v", s.runs)
			}
			for o := max(run.from, min); o < run.to; o++ { // below min: trimmed, held or not
				require.True(t, model[o], "%d held but not added", o)
				n++
			}
		}
		require.Len(t, model, n, "every offset added is held")
	}
	assert.NotEmpty(t, s.runs)
}

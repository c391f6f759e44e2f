package equeue

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A wait for a cohort that ends short suspends the next waits, twice as
// many after each miss in a row and at most maxCohortSkip; one that fills
// restores waiting at once.
func TestCohortBackoff_SkipsDoubleAfterMissesAndResetOnHit(t *testing.T) {
	var b cohortBackoff
	skipsAfterMiss := func() int {
		b.done(true)
		n := 0
		for !b.try() {
			n++
		}
		return n
	}
	assert.True(t, b.try(), "the first wait is tried")
	var got []int
	for range 7 {
		got = append(got, skipsAfterMiss())
	}
	assert.Equal(t, []int{2, 4, 8, 16, 32, 32, 32}, got)
	b.done(false)
	assert.True(t, b.try(), "a wait that filled restores waiting")
	assert.Equal(t, 2, skipsAfterMiss(), "the miss count starts again after a hit")
}

// The writer lingers for the last Sync's cohort only when it is larger than
// its own recent batch, and not while misses suspend it.
func TestCohortTarget_WantsTheCohortUntilItMisses(t *testing.T) {
	var ct cohortTarget
	assert.Equal(t, 64, ct.want(10, 64))
	assert.Equal(t, 50, ct.want(10, 50), "decided once per batch")
	ct.gathered(true, false) // the linger expired short: skip the next 2
	assert.Equal(t, 10, ct.want(10, 64))
	ct.gathered(false, false)
	assert.Equal(t, 10, ct.want(10, 64))
	ct.gathered(false, false)
	assert.Equal(t, 64, ct.want(10, 64))
	ct.gathered(false, false)
	assert.Equal(t, 12, ct.want(12, 8), "the writer's own batch size when larger")
	ct.gathered(true, false)
	assert.Equal(t, 64, ct.want(12, 64), "a miss without the cohort target costs nothing")
	ct.gathered(true, true)
	assert.Equal(t, 64, ct.want(12, 64), "a linger cut short by the completer is no miss")
}

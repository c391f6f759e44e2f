package equeue

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// liveCalls returns the consumer's counts of given-up and fenced handler
// calls.
func liveCalls(c *Consumer) (calling, fenced int) {
	c.live.mu.Lock()
	defer c.live.mu.Unlock()
	return c.live.calling, c.live.fenced
}

// TestRunner_CallCountsFollowTheFlags: calls in progress when a drain gives
// up (or the runner is fenced) move to the consumer's given-up (fenced)
// count, calls that begin later count themselves there, and each that ends
// takes itself off where its runner's flag put it; giving up wins over
// fencing, whichever came first.
func TestRunner_CallCountsFollowTheFlags(t *testing.T) {
	t.Run("give up, then fence", func(t *testing.T) {
		r := &runner{c: &Consumer{}}
		r.enterCall()
		r.enterCall()
		assertCalls(t, r.c, 0, 0, "calls of a live runner are waited for")
		r.giveUp()
		assert.True(t, r.gaveUp.Load())
		assertCalls(t, r.c, 2, 0, "both moved")
		r.leaveCall()
		r.enterCall()
		r.enterCall()
		assertCalls(t, r.c, 3, 0, "one ended, two began")
		r.markCalls(&r.abandoned, callsAbandoned)
		assert.True(t, r.abandoned.Load())
		assertCalls(t, r.c, 3, 0, "given up stays given up")
		r.giveUp()
		assertCalls(t, r.c, 3, 0, "a second give-up moves nothing")
		for range 3 {
			r.leaveCall()
		}
		assertCalls(t, r.c, 0, 0, "all ended")
	})
	t.Run("fence, then give up", func(t *testing.T) {
		r := &runner{c: &Consumer{}}
		r.enterCall()
		r.markCalls(&r.abandoned, callsAbandoned)
		r.enterCall()
		assertCalls(t, r.c, 0, 2, "fenced")
		r.giveUp()
		assertCalls(t, r.c, 2, 0, "moved from fenced to given up")
		r.leaveCall()
		r.leaveCall()
		assertCalls(t, r.c, 0, 0, "all ended")
	})
	t.Run("concurrent", func(t *testing.T) {
		r := &runner{c: &Consumer{}}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for range 1000 {
					r.enterCall()
					r.leaveCall()
				}
				if i == 3 {
					r.giveUp()
				}
			})
		}
		wg.Wait()
		assertCalls(t, r.c, 0, 0, "every call took itself off where it was counted")
		assert.Zero(t, r.calls.Load()&callsCount)
	})
}

func assertCalls(t *testing.T, c *Consumer, calling, fenced int, msg string) {
	t.Helper()
	gotCalling, gotFenced := liveCalls(c)
	assert.Equal(t, calling, gotCalling, "given up: %s", msg)
	assert.Equal(t, fenced, gotFenced, "fenced: %s", msg)
}

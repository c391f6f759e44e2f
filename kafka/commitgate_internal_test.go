package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommitGate_SettleCompletesOnceItsCommitsLand: a settle waiting for
// a commit in flight ends once that commit landed, even when another
// settle of the group ended early meanwhile (its request's connection
// closed). Before, the settle that ended reopened the gate with the
// commit still in it: commits sent after were let in under the waiting
// settle, which then waited for them too, and for as long as a stream of
// them overlapped (each sent before the one before was stored), past any
// session. Now a settle reopens the gate only if it is empty; otherwise
// the last waiter, or the coordinator's tick, does once it is.
func TestCommitGate_SettleCompletesOnceItsCommitsLand(t *testing.T) {
	c := newCoordinator(&Server{}) // no tick: nothing else reopens the gate
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	enter := func() (*commitGate, <-chan struct{}) {
		c.lock()
		defer c.mu.Unlock()
		_, _, gate, shut := c.enterGate("g", nil)
		return gate, shut
	}
	first, shut := enter()
	require.NotNil(t, first)
	require.Nil(t, shut)

	// A change of owners waits for it.
	settled := make(chan bool, 1)
	go func() {
		c.lock()
		defer c.mu.Unlock()
		settled <- c.settle(ctx, "g")
	}()
	require.Eventually(t, func() bool {
		c.lock()
		defer c.mu.Unlock()
		return c.commits["g"].awaited()
	}, 30*time.Second, time.Millisecond)

	// Another settle of the group ends early: its request's context ended.
	ended, end := context.WithCancel(ctx)
	end()
	c.lock()
	assert.False(t, c.settle(ended, "g"))
	c.mu.Unlock()

	// A commit sent now waits at the gate.
	second, shut := enter()
	if second != nil {
		t.Cleanup(second.leave) // so that the waiting settle ends
	}
	require.Nil(t, second, "let in while a settle waits for the commit before it")
	require.NotNil(t, shut)

	// The first commit lands: the waiting settle ends, and reopens the
	// gate for the commit that waited.
	first.leave()
	select {
	case ok := <-settled:
		assert.False(t, ok, "it waited: its caller checks its change again")
	case <-ctx.Done():
		t.Fatal("the settle still waits after the commit it waited for landed")
	}
	select {
	case <-shut:
	case <-ctx.Done():
		t.Fatal("the gate was not reopened")
	}
	second, shut = enter()
	require.NotNil(t, second)
	assert.Nil(t, shut)
	second.leave()
}

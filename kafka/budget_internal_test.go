package kafka

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestByteBudget_WaitsForRoom: reservations share the budget; one that
// does not fit waits until enough was given back, one larger than the
// whole budget takes all of it, and a wait that ends with its context
// says what waited and takes nothing.
func TestByteBudget_WaitsForRoom(t *testing.T) {
	b := newByteBudget(100, "for the test")
	ctx := context.Background()
	require.NoError(t, b.reserve(ctx, 60))
	waiting := newSignal()
	b.waiting = waiting.fire
	done := make(chan error, 1)
	go func() { done <- b.reserve(ctx, 50) }()
	<-waiting.c
	b.unreserve(60)
	require.NoError(t, <-done, "room was given back")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err := b.reserve(cctx, 500)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "waiting for room for the test")
	b.unreserve(50)

	require.NoError(t, b.reserve(ctx, 500), "larger than the budget: takes all of it")
	b.mu.Lock()
	assert.Equal(t, int64(0), b.free)
	b.mu.Unlock()
	b.unreserve(500)
	b.mu.Lock()
	assert.Equal(t, b.budget, b.free, "every reservation given back")
	b.mu.Unlock()
}

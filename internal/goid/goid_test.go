package goid

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ID is stable within a goroutine, non-zero, and differs between
// goroutines running at once.
func TestID_OnePerGoroutine(t *testing.T) {
	me := ID()
	require.NotZero(t, me)
	assert.Equal(t, me, ID(), "the same goroutine reads the same ID")

	const n = 8
	ids := make(chan uint64, n)
	hold := make(chan struct{})
	for range n {
		go func() {
			ids <- ID()
			<-hold // all alive at once: no ID reused
		}()
	}
	seen := map[uint64]bool{me: true}
	for range n {
		id := <-ids
		require.NotZero(t, id)
		require.False(t, seen[id], "ID %d read by two goroutines", id)
		seen[id] = true
	}
	close(hold)
}

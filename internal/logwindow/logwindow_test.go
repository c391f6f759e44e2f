package logwindow

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLimiter_BurstPerWindowThenTheCount: Burst lines pass in a window,
// the rest are counted, and the first line of the next window carries
// that count once.
func TestLimiter_BurstPerWindowThenTheCount(t *testing.T) {
	l := &Limiter{Window: 10 * time.Second, Burst: 3}
	now := time.Unix(1000, 0)
	for i := range 3 {
		ok, left := l.Allow(now)
		require.True(t, ok, "line %d of the burst", i)
		assert.Zero(t, left)
	}
	for range 4 {
		ok, _ := l.Allow(now.Add(time.Second))
		require.False(t, ok, "past the burst")
	}
	ok, left := l.Allow(now.Add(10 * time.Second))
	require.True(t, ok, "a new window")
	assert.Equal(t, 4, left, "the lines left out are said once")
	ok, left = l.Allow(now.Add(11 * time.Second))
	require.True(t, ok)
	assert.Zero(t, left)
}

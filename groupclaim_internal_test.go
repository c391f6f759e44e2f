package equeue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClaimGroup_LapsedClaimsAreDropped: claims that lapsed without being
// released (a coordinator that stopped renewing them) do not stay in the
// engine's memory once there are many: a new claim drops them.
func TestClaimGroup_LapsedClaimsAreDropped(t *testing.T) {
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	for i := range 2 * claimSweepAt {
		require.NoError(t, e.ClaimGroup(ctx, fmt.Sprintf("kafka-%03d", i), time.Nanosecond))
	}
	time.Sleep(time.Millisecond) // every claim above has lapsed
	require.NoError(t, e.ClaimGroup(ctx, "live", time.Hour))
	e.groups.mu.Lock()
	n, live := len(e.groups.claims), e.groups.claimed("live", time.Now())
	e.groups.mu.Unlock()
	assert.LessOrEqual(t, n, claimSweepAt, "lapsed claims are dropped once there are many")
	assert.True(t, live, "the live claim stays")
}

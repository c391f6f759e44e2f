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

// TestClaimGroup_RenewalsDoNotWalkEveryClaim: the Kafka listener renews
// each of its live groups' claims ten times a second. A renewal (a claim
// of a name already claimed) must not walk every claim under the
// coordinator's lock, or a listener with thousands of groups costs the
// square of their count per tick and stalls native joins and heartbeats.
// A lapsed claim left in the map shows whether a renewal walked it; new
// names still drop it once the map has grown enough to be worth a walk.
func TestClaimGroup_RenewalsDoNotWalkEveryClaim(t *testing.T) {
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	live := 2 * claimSweepAt
	for i := range live {
		require.NoError(t, e.ClaimGroup(ctx, fmt.Sprintf("live-%04d", i), time.Hour))
	}
	require.NoError(t, e.ClaimGroup(ctx, "lapsed", time.Nanosecond))
	time.Sleep(time.Millisecond) // "lapsed" has lapsed
	present := func() bool {
		e.groups.mu.Lock()
		defer e.groups.mu.Unlock()
		_, ok := e.groups.claims["lapsed"]
		return ok
	}
	for i := range live {
		require.NoError(t, e.ClaimGroup(ctx, fmt.Sprintf("live-%04d", i), time.Hour))
	}
	assert.True(t, present(), "a renewal walked every claim (it dropped the lapsed one)")

	for i := range 4 * live {
		require.NoError(t, e.ClaimGroup(ctx, fmt.Sprintf("new-%04d", i), time.Hour))
	}
	assert.False(t, present(), "new claims drop the lapsed ones once the claims have grown")
}

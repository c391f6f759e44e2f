package kafka

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// claimCounting is an engine that counts ClaimGroup calls.
type claimCounting struct {
	*equeue.Engine
	claims atomic.Int64
}

func (b *claimCounting) ClaimGroup(ctx context.Context, group string, d time.Duration) error {
	b.claims.Add(1)
	return b.Engine.ClaimGroup(ctx, group, d)
}

// TestClaims_RenewedOncePerQuarterLease: the coordinator's tick, ten
// times a second, renews a live group's claim only once it is a quarter
// of its lease old, not with a call into the engine per group on every
// tick.
func TestClaims_RenewedOncePerQuarterLease(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	b := &claimCounting{Engine: e}
	s, err := NewServer(b, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	c := newCoordinator(s)
	ctx := context.Background()
	live := []string{"g1", "g2", "g3"}

	c.renewClaims(ctx, live)
	require.Equal(t, int64(3), b.claims.Load(), "the first tick claims every live group")
	for range 20 {
		c.renewClaims(ctx, live)
	}
	assert.Equal(t, int64(3), b.claims.Load(), "ticks within a quarter lease renew nothing")

	c.mu.Lock()
	c.claimed["g2"] = time.Now().Add(-claimRenewEvery) // g2's claim is a quarter lease old
	c.mu.Unlock()
	c.renewClaims(ctx, live)
	assert.Equal(t, int64(4), b.claims.Load(), "a claim a quarter lease old is renewed")
}

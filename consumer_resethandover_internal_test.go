package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConsumer_OrderlyResetDuringHandoverRunsOneHandlerAtATime: an offset
// reset that comes while an orderly member hands a queue over (its drain
// waits for the running handler) must not grant the queue to the next
// member before the first one released it: that member would begin a
// message of the queue while the first one's handler still runs.
func TestConsumer_OrderlyResetDuringHandoverRunsOneHandlerAtATime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := newOrderlyRig(t, ctx)

	b, bStarted := g.startNext(t, ctx, "0")
	defer func() { require.NoError(t, b.Close()) }()
	// "0" sorts before "a": the average strategy moves the one queue to
	// b, and a hands it over, its drain waiting for the running handler.
	grp, err := g.e.groups.group("g")
	require.NoError(t, err)
	grp.mu.Lock()
	target := grp.target[QueueRef{Topic: "t", Queue: 0}]
	grp.mu.Unlock()
	require.Equal(t, "0", target, "the queue moves to b")
	waitFor(t, func() bool { return stackHas("equeue.(*Consumer).handOver(") }, "a hands the queue over, waiting for its handler")

	require.NoError(t, g.e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToEarliest}))
	// b's answer after the reset (the version b must have applied): had
	// the reset granted b the queue, that answer would hold it.
	grp.mu.Lock()
	version := grp.members["0"].version
	grp.mu.Unlock()
	waitFor(t, func() bool {
		b.mu.Lock()
		seen := b.version >= version
		b.mu.Unlock()
		return bStarted.Load() || (seen && len(b.Queues()) == 0)
	}, "b sees the reset, and begins a message or holds no queue")
	assert.False(t, bStarted.Load(), "b began a message of the queue while a's handler runs")
	close(g.release)
	waitFor(t, func() bool { return bStarted.Load() }, "b handles the queue once a released it")
	require.NoError(t, g.c.Close())
	assert.Equal(t, int64(1), g.most.Load(), "one handler of the queue at a time")
}

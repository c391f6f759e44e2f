package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestPullConsumer_HeartbeatsGoOnWhileStartAppliesItsGrants: a
// PullConsumer's Start fetches the offsets of the queues its join was
// granted before it returns; a FetchOffsets that outlasts the engine's
// session timeout does not let the engine expire the member meanwhile:
// the group's epoch stays, the member stays listed with its queues, and
// Start returns with them assigned. Before, Start sent no heartbeat until
// the call returned, the engine expired the member, and Start failed.
func TestPullConsumer_HeartbeatsGoOnWhileStartAppliesItsGrants(t *testing.T) {
	forTransports(t, testPullConsumer_HeartbeatsGoOnWhileStartAppliesItsGrants)
}

func testPullConsumer_HeartbeatsGoOnWhileStartAppliesItsGrants(t *testing.T, tr string) {
	const n = 40
	ctx := ctxT(t)
	var pc *equeue.PullConsumer
	held := startThroughAHeldFetch(t, tr, "p1", n, func(b equeue.Broker) (func(context.Context) error, func() error) {
		var err error
		pc, err = equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", ID: "p1",
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: holdHeartbeat})
		require.NoError(t, err)
		return pc.Start, pc.Close
	})
	require.Equal(t, held, pc.Assigned(), "Start returned with the granted queues assigned")
	got := 0
	for _, q := range pc.Assigned() {
		msgs, err := pc.Fetch(ctx, q, n, 0)
		require.NoError(t, err)
		got += len(msgs)
	}
	assert.Equal(t, n, got, "every message fetched from the committed start")
}

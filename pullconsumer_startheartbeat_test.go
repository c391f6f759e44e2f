package equeue_test

import (
	"fmt"
	"testing"
	"time"

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
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", &equeue.Options{SessionTimeout: holdSession})
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	p := newProducer(t, b, nil)
	const n = 40
	for i := range n {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%d", i)})
		require.NoError(t, err)
	}
	hb := &holdBroker{Broker: b}
	hb.arm()
	pc, err := equeue.NewPullConsumer(hb, equeue.PullConsumerOptions{Group: "g", ID: "p1",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: holdHeartbeat})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	started := make(chan error, 1)
	go func() { started <- pc.Start(ctx) }()
	hb.waitEntered(t, started)
	epoch, held := memberQueues(t, e, "g", "t")
	require.Len(t, held["p1"], 4)
	time.Sleep(3 * holdSession) // the FetchOffsets is held for three sessions

	after, members := memberQueues(t, e, "g", "t")
	assert.Equal(t, epoch, after, "no rebalance while Start applied the grants")
	assert.Equal(t, held["p1"], members["p1"], "p1 is still a member with its queues")
	assert.Positive(t, hb.answered.Load(), "heartbeats were answered while the call was held")

	hb.release()
	require.NoError(t, <-started)
	require.Equal(t, held["p1"], pc.Assigned(), "Start returned with the granted queues assigned")
	got := 0
	for _, q := range pc.Assigned() {
		msgs, err := pc.Fetch(ctx, q, n, 0)
		require.NoError(t, err)
		got += len(msgs)
	}
	assert.Equal(t, n, got, "every message fetched from the committed start")
}

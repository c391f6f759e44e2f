package equeue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// cutShortBroker is an engine reached as a broker of its own (a cluster
// node) whose heartbeats fail, while cut is set, as a node's call cut
// short by the end of its leader's tenure does: an error matching both
// ErrIndeterminate and ErrClosed.
type cutShortBroker struct {
	*equeue.Engine
	cut   atomic.Bool
	cuts  atomic.Int32 // heartbeats cut short
	after atomic.Int32 // heartbeats answered since cut was cleared
}

func (b *cutShortBroker) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	if b.cut.Load() {
		b.cuts.Add(1)
		return equeue.Assignment{}, fmt.Errorf("%w: cluster: cut short: %w", equeue.ErrIndeterminate, equeue.ErrClosed)
	}
	b.after.Add(1)
	return b.Engine.Heartbeat(ctx, req)
}

// A heartbeat cut short by a leader's tenure ending (ErrIndeterminate
// with ErrClosed) is not the broker's close: the consumer's membership
// goes on heartbeating once the next leader answers, instead of ending.
func TestConsumer_HeartbeatCutShortByATenureEndKeepsTheMembership(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	b := &cutShortBroker{Engine: e}
	c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "a",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 20 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(ctxT(t)))
	b.cut.Store(true)
	eventually(t, waitLong, func() bool { return b.cuts.Load() >= 2 }, "heartbeats cut short")
	b.after.Store(0)
	b.cut.Store(false)
	eventually(t, waitLong, func() bool { return b.after.Load() >= 3 }, "heartbeats go on after the cut-short ones")
}

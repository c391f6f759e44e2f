package equeue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A Start that fails, given a context without a deadline (as
// context.Background is), over a broker that answers no leave (a silent
// remote connection): its leave is bounded by 10 s, not by a context that
// never ends, so Start returns its failure. Nobody cancels the context
// here until the test ends.
func TestStartWithoutADeadline_FailedStartsLeaveIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(b equeue.Broker, ctx context.Context) error
		fetch error
	}{
		{"Consumer", func(b equeue.Broker, ctx context.Context) error {
			c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "a",
				Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
				Handler: func(context.Context, *equeue.Message) error { return nil }})
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			return c.Start(ctx)
		}, equeue.ErrClosed}, // the broker's own close: final on a broker of its own
		{"PullConsumer", func(b equeue.Broker, ctx context.Context) error {
			pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", ID: "a",
				Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(func() { _ = pc.Close() })
			return pc.Start(ctx)
		}, errors.New("test: fetch refused")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
			b := newSilentLeaveBroker(e)
			close(b.joinGo)
			b.fetch = tc.fetch
			ctx, cancel := context.WithCancel(context.Background()) // no deadline
			t.Cleanup(cancel)
			started := make(chan error, 1)
			go func() { started <- tc.start(b, ctx) }()
			<-b.left // the failed Start's leave, unanswered
			select {
			case err := <-started:
				require.ErrorIs(t, err, tc.fetch)
			case <-time.After(waitLong):
				t.Fatal("Start waits for ever on the unanswered leave of its failure")
			}
		})
	}
}

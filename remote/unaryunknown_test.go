package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// heldCall runs do with a context that ends while the call's write is
// held in the gated store (the broker took the call), then opens the
// gate, and returns do's error.
func heldCall(t *testing.T, gs *gatedStore, do func(ctx context.Context) error) error {
	t.Helper()
	gs.hold()
	defer gs.release()
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- do(ctx) }()
	eventually(t, 10*time.Second, func() bool { return gs.waiting.Load() > 0 }, "the call never reached the store")
	cancel()
	return <-done
}

// A send-back the broker took (its write is under way) whose context ends,
// or whose server stops, before the answer is of unknown outcome, as in
// process: the caller gets ErrIndeterminate with the cause, never the cause
// alone, which means "not stored" (the send-back is stored here).
func TestClient_SendBackWhoseContextEndsInFlightIsUnknown(t *testing.T) {
	for _, stop := range []bool{false, true} {
		t.Run(map[bool]string{false: "context ends", true: "server stops"}[stop], func(t *testing.T) {
			ctx := ctxT(t)
			gs, e := gatedEngine(t)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			s := startServer(t, e, "", nil)
			c := dial(t, s.addr, nil)
			_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m")}}})
			require.NoError(t, err)
			a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			var g equeue.Grant
			for _, q := range a.Queues {
				if q.Topic == "t" {
					g = q
				}
			}
			require.Equal(t, "t", g.Topic)
			res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Group: "g", Member: "m", Epoch: g.Epoch})
			require.NoError(t, err)
			require.Len(t, res.Messages, 1)

			sendBack := func(ctx context.Context) error {
				_, err := c.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, Attempts: 1, DeadLetter: true, Cause: "x"})
				return err
			}
			if stop {
				gs.hold()
				done := make(chan error, 1)
				go func() { done <- sendBack(ctx) }()
				eventually(t, 10*time.Second, func() bool { return gs.waiting.Load() > 0 }, "the send-back never reached the store")
				stopped := make(chan struct{})
				go func() { s.stop(); close(stopped) }()
				err = <-done
				gs.release()
				<-stopped
				assert.ErrorIs(t, err, remote.ErrUnavailable)
			} else {
				err = heldCall(t, gs, sendBack)
				assert.ErrorIs(t, err, context.Canceled)
			}
			assert.ErrorIs(t, err, equeue.ErrIndeterminate, "the broker took the send-back: its outcome is unknown")
			eventually(t, 10*time.Second, func() bool {
				dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				return err == nil && len(dls) == 1
			}, "the send-back was stored")
		})
	}
}

// An admin call that changes the engine, whose context ends after the
// broker took it, reports ErrIndeterminate with the context's error: the
// change may be made (here it is), so the context's error alone, which a
// call never sent gives, would tell the caller it was not.
func TestClient_AdminChangeWhoseContextEndsInFlightIsUnknown(t *testing.T) {
	ctx := ctxT(t)
	gs, e := gatedEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	c := dial(t, startServer(t, e, "", nil).addr, nil)
	for _, call := range []struct {
		name string
		do   func(ctx context.Context, c *remote.Client) error
		done func() bool
	}{
		{"CreateTopic", func(ctx context.Context, c *remote.Client) error { return c.CreateTopic(ctx, "t2", 1) },
			func() bool { _, err := e.Topic(ctx, "t2"); return err == nil }},
		{"AddQueues", func(ctx context.Context, c *remote.Client) error { return c.AddQueues(ctx, "t", 1) },
			func() bool { ti, err := e.Topic(ctx, "t"); return err == nil && len(ti.Queues) == 2 }},
	} {
		err := heldCall(t, gs, func(ctx context.Context) error { return call.do(ctx, c) })
		assert.ErrorIs(t, err, context.Canceled, call.name)
		assert.ErrorIs(t, err, equeue.ErrIndeterminate, "%s: the broker took the call: its outcome is unknown", call.name)
		eventually(t, 10*time.Second, call.done, "%s was made", call.name)
	}
}

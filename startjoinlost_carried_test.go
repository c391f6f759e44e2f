package equeue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// loseJoinDropLeaves loses the answer of the first join, which the engine
// took, and drops every leave unsent while dropLeaves is set: a broker
// cut off for a moment after the join.
type loseJoinDropLeaves struct {
	equeue.Broker
	joinLost   atomic.Bool
	dropLeaves atomic.Bool
	leaves     atomic.Int32 // sent to the engine
}

func (b *loseJoinDropLeaves) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	a, err := b.Broker.JoinGroup(ctx, req)
	if err == nil && b.joinLost.CompareAndSwap(false, true) {
		return equeue.Assignment{}, errors.New("join answer lost")
	}
	return a, err
}

func (b *loseJoinDropLeaves) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	if b.dropLeaves.Load() {
		return errors.New("connection reset")
	}
	b.leaves.Add(1)
	return b.Broker.LeaveGroup(ctx, req)
}

// A Start whose join's answer was lost, and whose leave for it was not
// answered, keeps its incarnation so that the next Start takes over the
// member that join may have made. When the broker refuses that next
// join (ErrJoinRefused), the member the first join made is still there:
// the refusal says that this join added none, not that there is none.
// Start leaves for it, or it would hold its queues until its session
// expired.
func TestStart_RefusedJoinOfACarriedIncarnationLeavesTheMemberItMayHave(t *testing.T) {
	refusals := []struct {
		name   string
		cancel bool                       // the second Start's context has ended
		write  func(b *store.Batch) error // the store's answer to writes during the second Start
		cause  error
	}{
		{name: "context ended", cancel: true, cause: context.Canceled},
		{name: "group not stored", write: func(*store.Batch) error { return store.ErrNoSpace }, cause: equeue.ErrNoSpace},
	}
	for _, kind := range []string{"consumer", "pull consumer"} {
		for _, tc := range refusals {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				r := newFaultRig(t, "memory", &equeue.Options{SessionTimeout: time.Hour})
				ctx := ctxT(t)
				require.NoError(t, r.E.CreateTopic(ctx, "t", 2))
				b := &loseJoinDropLeaves{Broker: r.E}
				b.dropLeaves.Store(true)
				subs := []equeue.Subscription{{Topic: "t"}}
				var start func(context.Context) error
				var closeIt func() error
				if kind == "consumer" {
					c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: subs,
						Handler: func(context.Context, *equeue.Message) error { return nil }})
					require.NoError(t, err)
					start, closeIt = c.Start, c.Close
				} else {
					pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", ID: "c", Subscriptions: subs})
					require.NoError(t, err)
					start, closeIt = pc.Start, pc.Close
				}
				require.Error(t, start(ctx), "the join's answer is lost")
				require.Equal(t, []string{"c"}, membersOf(t, r.E, "g"), "the lost join made the member; the leave for it was not sent")

				b.dropLeaves.Store(false)
				sctx := ctx
				if tc.cancel {
					c, cancel := context.WithCancel(ctx)
					cancel()
					sctx = c
				}
				if tc.write != nil {
					r.FS.OnWrite(tc.write)
				}
				err := start(sctx)
				r.FS.OnWrite(nil)
				require.Error(t, err)
				assert.ErrorIs(t, err, tc.cause)
				assert.ErrorIs(t, err, equeue.ErrJoinRefused)
				assert.Equal(t, int32(1), b.leaves.Load(), "Start left for the member its carried incarnation may have")
				assert.Empty(t, membersOf(t, r.E, "g"), "no member of the failed Starts is left")
				require.NoError(t, closeIt())
			})
		}
	}
}

package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A CloseContext cut by its own context before its leave was answered,
// and returned before Engine.Close began, leaves its member in the group
// no longer than that: Engine.Close leaves again for it, as it does for a
// cut close still running, and reports nothing when that leave succeeds.
func TestEngineClose_LeavesForACloseCutAndReturnedBefore(t *testing.T) {
	for _, kind := range []string{"consumer", "pull consumer"} {
		t.Run(kind, func(t *testing.T) {
			e, _ := openEngine(t, "memory", &equeue.Options{SessionTimeout: time.Hour})
			ctx := ctxT(t)
			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			w := &leaveHoldWrapper{Engine: e, member: "a", held: make(chan struct{}), after: make(chan equeue.GroupInfo, 1)}
			subs := []equeue.Subscription{{Topic: "t"}}
			var closeCtx func(context.Context) error
			if kind == "consumer" {
				a, err := equeue.NewConsumer(w, equeue.ConsumerOptions{Group: "g", ID: "a", Subscriptions: subs,
					HeartbeatInterval: 50 * time.Millisecond, Handler: func(context.Context, *equeue.Message) error { return nil }})
				require.NoError(t, err)
				require.NoError(t, a.Start(ctx))
				closeCtx = a.CloseContext
			} else {
				a, err := equeue.NewPullConsumer(w, equeue.PullConsumerOptions{Group: "g", ID: "a", Subscriptions: subs,
					HeartbeatInterval: 50 * time.Millisecond})
				require.NoError(t, err)
				require.NoError(t, a.Start(ctx))
				closeCtx = a.CloseContext
			}
			// b, of the same kind on a broker of its own, keeps the group.
			var closeB func() error
			if kind == "consumer" {
				b, err := equeue.NewConsumer(ownBroker{e}, equeue.ConsumerOptions{Group: "g", ID: "b", Subscriptions: subs,
					HeartbeatInterval: 50 * time.Millisecond, Handler: func(context.Context, *equeue.Message) error { return nil }})
				require.NoError(t, err)
				require.NoError(t, b.Start(ctx))
				closeB = b.Close
			} else {
				b, err := equeue.NewPullConsumer(ownBroker{e}, equeue.PullConsumerOptions{Group: "g", ID: "b", Subscriptions: subs,
					HeartbeatInterval: 50 * time.Millisecond})
				require.NoError(t, err)
				require.NoError(t, b.Start(ctx))
				closeB = b.Close
			}
			defer func() { assert.NoError(t, closeB(), "b's leave on the closed engine is no failure") }()

			userCtx, cancelUser := context.WithCancel(ctx)
			userClose := make(chan error, 1)
			go func() { userClose <- closeCtx(userCtx) }()
			<-w.held // the user's leave waits for the broker
			cancelUser()
			require.ErrorIs(t, <-userClose, context.Canceled, "the user's close returned, cut")
			require.Contains(t, memberIDs(t, e, "g"), "a", "the cut close left its member behind")

			require.NoError(t, e.Close(), "Engine.Close finished the leave the user's close could not")
			select {
			case gi := <-w.after:
				require.Len(t, gi.Members, 1, "no stale member is left: %+v", gi.Members)
				assert.Equal(t, "b", gi.Members[0].ID)
			default:
				t.Fatal("Engine.Close did not leave the group for the close cut before it")
			}
		})
	}
}

// memberIDs lists the IDs of group's members.
func memberIDs(t *testing.T, e *equeue.Engine, group string) []string {
	t.Helper()
	gi, err := e.Group(ctxT(t), group)
	require.NoError(t, err)
	ids := make([]string, 0, len(gi.Members))
	for _, m := range gi.Members {
		ids = append(ids, m.ID)
	}
	return ids
}

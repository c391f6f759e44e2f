package equeue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRedrive_WaitForADeletionHonoursItsContext: a redrive's send waits
// for a deletion of its group under way (the deletion holds the group's
// name gate). The redrive's context must end that wait: Redrive returns
// an error matching the context's, and sends nothing. Before, the wait
// (holdOffDeletion) ignored the context, and the redrive hung for as
// long as the deletion held the gate.
func TestRedrive_WaitForADeletionHonoursItsContext(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := f.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("dead")})
			require.NoError(t, err)
			c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				Handler: func(context.Context, *equeue.Message) error { return equeue.DeadLetter(errors.New("never")) }})
			eventually(t, waitLong, func() bool {
				dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				return err == nil && len(dl) == 1
			}, "dead letter stored")
			require.NoError(t, c.Close())

			// The redrive stops before its send; the deletion then takes
			// the gate and stops before it deletes the group's topics.
			atSend, letSend := make(chan struct{}), make(chan struct{})
			atTopics, letTopics := make(chan struct{}), make(chan struct{})
			var once, onceTopics bool
			equeue.OnRedriveOne(e, func(string) {
				if !once {
					once = true
					close(atSend)
					<-letSend
				}
			})
			t.Cleanup(func() { equeue.OnRedriveOne(e, nil) })
			equeue.OnDeleteGroupTopics(e, func(string) {
				if !onceTopics {
					onceTopics = true
					close(atTopics)
					<-letTopics
				}
			})
			t.Cleanup(func() { equeue.OnDeleteGroupTopics(e, nil) })
			released := false
			release := func() {
				if !released {
					released = true
					close(letTopics)
				}
			}
			t.Cleanup(release)

			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			redriven := make(chan error, 1)
			go func() {
				_, err := e.Redrive(rctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
				redriven <- err
			}()
			<-atSend
			deleted := make(chan error, 1)
			go func() { deleted <- e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}) }()
			<-atTopics // the deletion holds the gate
			close(letSend)
			eventually(t, waitLong, func() bool { return goroutineIn("equeue.(*Engine).holdOffDeletion(") },
				"the redrive's send waits for the deletion")
			cancel()

			var rerr error
			eventually(t, waitLong, func() bool {
				select {
				case rerr = <-redriven:
					return true
				default:
					return false
				}
			}, "the redrive returns once its context ended, the deletion still holding the gate")
			assert.ErrorIs(t, rerr, context.Canceled)

			release()
			require.NoError(t, <-deleted)
			if rerr == nil { // the redrive hung: let it end before the engine closes
				require.Error(t, <-redriven)
			}
			_, err = e.Topic(ctx, "t")
			require.NoError(t, err)
			assert.Empty(t, queueBodies(t, e, "t", 0)[1:], "the redrive sent nothing back")
		})
	}
}

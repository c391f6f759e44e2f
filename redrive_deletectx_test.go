package equeue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRedrive_DeletionOfTheGroupsTopicsHonoursItsContext: a DeleteTopic
// of a group's %DLQ% or %RETRY% topic, or a DeleteGroup, waits for a
// redrive's send under way (it holds the group's name gate). Its context
// must end that wait: the deletion returns the context's error and
// deletes nothing, and the gate is given back once the send is done.
// Before, the wait ignored the context, and the deletion hung for as
// long as the send held the gate.
func TestRedrive_DeletionOfTheGroupsTopicsHonoursItsContext(t *testing.T) {
	deletions := map[string]func(context.Context, *equeue.Engine) error{
		"DeleteTopic(DLQ)":   func(ctx context.Context, e *equeue.Engine) error { return e.DeleteTopic(ctx, equeue.DLQTopic("g")) },
		"DeleteTopic(RETRY)": func(ctx context.Context, e *equeue.Engine) error { return e.DeleteTopic(ctx, equeue.RetryTopic("g")) },
		"DeleteGroup": func(ctx context.Context, e *equeue.Engine) error {
			return e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{})
		},
	}
	for _, kind := range storeKinds {
		for name, del := range deletions {
			t.Run(kind+"/"+name, func(t *testing.T) {
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
				for _, tp := range []string{equeue.DLQTopic("g"), equeue.RetryTopic("g")} {
					_, err = e.Topic(ctx, tp)
					require.NoError(t, err, "%s is there before", tp)
				}

				held, release := make(chan struct{}), make(chan struct{})
				t.Cleanup(func() {
					select {
					case <-release:
					default:
						close(release)
					}
				})
				equeue.OnRedriveHeld(e, func(string) {
					close(held)
					<-release
				})
				t.Cleanup(func() { equeue.OnRedriveHeld(e, nil) })
				redriven := make(chan error, 1)
				go func() {
					_, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
					redriven <- err
				}()
				<-held

				dctx, cancel := context.WithCancel(ctx)
				deleted := make(chan error, 1)
				go func() { deleted <- del(dctx, e) }()
				eventually(t, waitLong, func() bool { return equeue.NameGateRefs(e, "g") >= 2 || len(deleted) > 0 },
					"the deletion waits for the send's gate, or is done")
				cancel()
				var derr error
				eventually(t, waitLong, func() bool {
					select {
					case derr = <-deleted:
						return true
					default:
						return false
					}
				}, "the deletion returns once its context ended, the send still holding the gate")
				assert.ErrorIs(t, derr, context.Canceled)
				for _, tp := range []string{equeue.DLQTopic("g"), equeue.RetryTopic("g")} {
					_, err = e.Topic(ctx, tp)
					assert.NoError(t, err, "%s is left as it was", tp)
				}
				_, err = e.Group(ctx, "g")
				assert.NoError(t, err, "the group is left as it was")

				close(release)
				require.NoError(t, <-redriven)
				eventually(t, waitLong, func() bool { return equeue.NameGateRefs(e, "g") == 0 }, "the gate is given back")
				require.NoError(t, del(ctx, e), "the deletion goes through once the send is done")
			})
		}
	}
}

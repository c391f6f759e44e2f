package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRedrive_RacingDeleteGroupWritesNothing deletes the group a Redrive
// is redriving between its check of the group and the write of its
// dead letter's copy. The redrive then fails with ErrGroupNotFound, having
// written nothing: no copy (the group's retry topic is not made again, for
// a group of the same name made later to consume; nor is the dead letter
// sent to its topic), and no redriven mark.
func TestRedrive_RacingDeleteGroupWritesNothing(t *testing.T) {
	for _, kind := range storeKinds {
		for _, toTopic := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/toTopic=%v", kind, toTopic), func(t *testing.T) {
				ctx := ctxT(t)
				f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
				e := f.E
				require.NoError(t, e.CreateTopic(ctx, "t", 1))
				_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("dead")})
				require.NoError(t, err)
				c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
					Handler: func(context.Context, *equeue.Message) error { return equeue.DeadLetter(errors.New("never")) }})
				eventually(t, 30*time.Second, func() bool {
					dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
					return err == nil && len(dl) == 1
				}, "dead letter stored")
				require.NoError(t, c.Close())
				before, err := e.Topic(ctx, "t")
				require.NoError(t, err)

				var once sync.Once
				var deleted error
				equeue.OnRedriveOne(e, func(string) {
					once.Do(func() { deleted = e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}) })
				})
				t.Cleanup(func() { equeue.OnRedriveOne(e, nil) })
				n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: toTopic})
				require.NoError(t, deleted, "the group was deleted during the redrive")
				assert.ErrorIs(t, err, equeue.ErrGroupNotFound)
				assert.Zero(t, n)

				_, err = e.Topic(ctx, equeue.RetryTopic("g"))
				assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "the deleted group's retry topic is not made again")
				_, err = e.Topic(ctx, equeue.DLQTopic("g"))
				assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
				after, err := e.Topic(ctx, "t")
				require.NoError(t, err)
				assert.Equal(t, before.Queues, after.Queues, "nothing was sent to the dead letter's topic")
				assert.Empty(t, redrivenKeys(t, f.FS, "g"), "no redriven mark of the deleted group")
				assert.Empty(t, groupFootprint(t, f.FS, "g"), "nothing of the deleted group is stored")
			})
		}
	}
}

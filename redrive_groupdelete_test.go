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

				redriveRefusedAfter(t, e, toTopic, "the group was deleted during the redrive", func() error {
					return e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{})
				})

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

// redriveRefusedAfter redrives all of group "g"'s dead letters (to their
// topics when toTopic), running between the listing and the first send,
// once, during (a deletion of the group, which must succeed: why says
// so); the redrive must then send nothing and fail with ErrGroupNotFound.
func redriveRefusedAfter(t *testing.T, e *equeue.Engine, toTopic bool, why string, during func() error) {
	t.Helper()
	var once sync.Once
	var duringErr error
	equeue.OnRedriveOne(e, func(string) { once.Do(func() { duringErr = during() }) })
	t.Cleanup(func() { equeue.OnRedriveOne(e, nil) })
	n, err := e.Redrive(ctxT(t), "g", equeue.RedriveRequest{All: true, ToTopic: toTopic})
	require.NoError(t, duringErr, why)
	assert.ErrorIs(t, err, equeue.ErrGroupNotFound)
	assert.Zero(t, n)
}

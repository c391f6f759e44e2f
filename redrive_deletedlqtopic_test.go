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

// TestRedrive_DeleteTopicOfTheDLQWaitsForTheSend deletes the dead-letter
// topic of a group the engine holds with DeleteTopic while a Redrive's
// send holds off the group's deletion (it checked that the topic is there
// and is about to queue the dead letter's copy and mark). The deletion
// must wait for that send and then delete its mark with the topic: no
// redriven mark of the deleted topic is left, and a dead-letter topic
// made again under the name lists its dead letters as not redriven.
// Before, DeleteTopic took no gate of the group: it deleted the topic and
// its marks in between, and the send's mark landed after it, for a topic
// gone.
func TestRedrive_DeleteTopicOfTheDLQWaitsForTheSend(t *testing.T) {
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
				_, err = e.Group(ctx, "g")
				require.NoError(t, err, "the engine holds the group")

				deleted := make(chan error, 1)
				var once sync.Once
				equeue.OnRedriveHeld(e, func(string) {
					once.Do(func() {
						go func() { deleted <- e.DeleteTopic(ctx, equeue.DLQTopic("g")) }()
						// The deletion waits for the send (it takes the
						// group's name gate after it), or it is done.
						eventually(t, 10*time.Second, func() bool { return equeue.NameGateRefs(e, "g") >= 2 || len(deleted) > 0 },
							"the deletion waits for the send, or is done")
					})
				})
				t.Cleanup(func() { equeue.OnRedriveHeld(e, nil) })
				n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: toTopic})
				require.NoError(t, <-deleted)
				require.NoError(t, err)
				assert.Equal(t, 1, n, "the send began before the deletion: it is done")

				_, err = e.Topic(ctx, equeue.DLQTopic("g"))
				assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
				assert.Empty(t, redrivenKeys(t, f.FS, "g"), "no redriven mark of the deleted dead-letter topic")

				// A dead-letter topic made again starts clean.
				m := &equeue.Message{Body: []byte("new")}
				m.SetSysProperties(map[string]string{equeue.SysOriginTopic: "t", equeue.SysOriginQueue: "0", equeue.SysOriginOffset: "0"})
				_, err = equeue.AppendInternal(ctx, e, &equeue.AppendRequest{Topic: equeue.DLQTopic("g"), Messages: []*equeue.Message{m}})
				require.NoError(t, err)
				dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				require.NoError(t, err)
				require.Len(t, dls, 1)
				assert.False(t, dls[0].Redriven, "the new dead-letter topic's dead letter was never redriven")
				assert.Empty(t, redrivenKeys(t, f.FS, "g"))
			})
		}
	}
}

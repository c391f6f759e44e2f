package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// groupNotInMemory leaves group g of f's engine with one dead letter
// ("dead", of topic t) and nothing else: a DeleteGroup cut short deleted
// its keys and its memory, and failed to delete its dead-letter topic.
// With reopen, the engine is opened again on what is stored. It returns
// the engine.
func groupNotInMemory(t *testing.T, f *faultRig, reopen bool) *equeue.Engine {
	t.Helper()
	ctx := ctxT(t)
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
	failWritesOf(f.FS, "topic/"+equeue.DLQTopic("g"))
	require.Error(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}), "cut short")
	f.FS.OnWrite(nil)
	if reopen {
		e = f.reopen()
	}
	_, err = e.Group(ctx, "g")
	require.ErrorIs(t, err, equeue.ErrGroupNotFound, "the engine does not hold the group")
	dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dl, 1, "its dead letter is left")
	require.False(t, dl[0].Redriven)
	return e
}

// TestRedrive_ToTopicOfAGroupNotInMemoryRacingDeleteGroupWritesNothing
// deletes a group the engine does not hold in memory (only its dead
// letters are left) between a ToTopic Redrive's listing of its dead
// letters and the write of one's copy and mark. The redrive must then fail
// with ErrGroupNotFound, having sent nothing to the topic, and leave no
// redriven mark of the deleted group, as it does for a group in memory
// (TestRedrive_RacingDeleteGroupWritesNothing). Before, it took no gate
// for such a group: it sent the dead letter of a deleted group to its
// topic and wrote a mark that outlived the deletion.
func TestRedrive_ToTopicOfAGroupNotInMemoryRacingDeleteGroupWritesNothing(t *testing.T) {
	for _, kind := range storeKinds {
		for _, reopen := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reopen=%v", kind, reopen), func(t *testing.T) {
				ctx := ctxT(t)
				f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
				e := groupNotInMemory(t, f, reopen)
				before, err := e.Topic(ctx, "t")
				require.NoError(t, err)

				redriveRefusedAfter(t, e, true, "the group was deleted during the redrive", func() error {
					return e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{})
				})

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

// TestRedrive_ToTopicOfAGroupNotInMemoryDeleteGroupWaitsForTheSend deletes
// a group the engine does not hold in memory while a ToTopic Redrive
// writes its dead letter's copy and mark: the dead letter goes back once,
// and the deletion, which waits for that write, deletes the mark with the
// dead-letter topic.
func TestRedrive_ToTopicOfAGroupNotInMemoryDeleteGroupWaitsForTheSend(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := groupNotInMemory(t, f, true)

			inWrite, release := holdWriteOf(t, f, "dead")
			type result struct {
				n   int
				err error
			}
			redrove := make(chan result, 1)
			go func() {
				n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
				redrove <- result{n, err}
			}()
			<-inWrite
			deleted := make(chan error, 1)
			go func() { deleted <- e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}) }()
			eventually(t, waitLong, func() bool {
				if len(deleted) > 0 {
					return true
				}
				for _, blocked := range []string{"[sync.RWMutex.Lock", "[select", "[chan receive"} {
					if goroutineIn("(*Engine).DeleteGroup(", blocked) {
						return true
					}
				}
				return false
			}, "the deletion waits, or is done")
			release()
			res := <-redrove
			require.NoError(t, res.err)
			assert.Equal(t, 1, res.n)
			require.NoError(t, <-deleted)

			assert.Equal(t, []string{"dead", "dead"}, queueBodies(t, e, "t", 0), "the dead letter went back once")
			_, err := e.Topic(ctx, equeue.DLQTopic("g"))
			assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
			assert.Empty(t, redrivenKeys(t, f.FS, "g"), "the mark went with the group")
			assert.Empty(t, groupFootprint(t, f.FS, "g"), "nothing of the deleted group is stored")
		})
	}
}

package equeue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestDeleteGroup_OfAGroupNotInMemoryHoldsItsNameUntilItsTopicsAreGone
// deletes a group the engine does not hold in memory (a DeleteGroup cut
// short left only its dead letters, and the engine was opened again), and
// while the deletion deletes its dead-letter topic, a member joins the
// group or CommitGroupOffsets commits for it. As for a group in memory
// (TestDeleteGroup_JoinWhileItsTopicsAreDeletedLosesNoRetry), the join or
// commit must wait until the deletion is done, then make a fresh group
// with none of the deleted one's dead letters. Before, such a deletion
// took no hold on the name: the join or commit made the group again at
// once, beside the dead-letter topic about to be deleted.
func TestDeleteGroup_OfAGroupNotInMemoryHoldsItsNameUntilItsTopicsAreGone(t *testing.T) {
	makers := map[string]func(ctx context.Context, e *equeue.Engine) error{
		"join": func(ctx context.Context, e *equeue.Engine) error {
			_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "a", Incarnation: "1",
				Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			return err
		},
		"commit": func(ctx context.Context, e *equeue.Engine) error {
			return e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 0})
		},
	}
	for _, kind := range storeKinds {
		for how, makeGroup := range makers {
			t.Run(fmt.Sprintf("%s/%s", kind, how), func(t *testing.T) {
				ctx := ctxT(t)
				f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
				e := groupNotInMemory(t, f, true)

				atTopics, resume := make(chan struct{}), make(chan struct{})
				equeue.OnDeleteGroupTopics(e, func(string) {
					close(atTopics)
					<-resume
				})
				t.Cleanup(func() { equeue.OnDeleteGroupTopics(e, nil) })
				deleted := make(chan error, 1)
				go func() { deleted <- e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}) }()
				select {
				case <-atTopics: // its keys are deleted, its topics not yet
				case <-ctx.Done():
					t.Fatal("DeleteGroup did not reach the group's topics")
				}

				made := make(chan error, 1)
				go func() { made <- makeGroup(ctx, e) }()
				eventually(t, 10*time.Second, func() bool { return equeue.GroupDeletionWaits(e) > 0 || len(made) > 0 },
					"the "+how+" waits for the deletion, or makes the group")
				select {
				case err := <-made:
					close(resume)
					<-deleted
					t.Fatalf("the %s made the group during its deletion (err %v): it did not wait", how, err)
				default:
				}

				close(resume)
				require.NoError(t, <-deleted)
				require.NoError(t, <-made, "the %s made the group once the deletion was done", how)

				info, err := e.Group(ctx, "g")
				require.NoError(t, err, "the group is made again")
				for _, q := range info.Queues {
					assert.LessOrEqual(t, q.Committed, int64(0), "the new group starts afresh: %v", q.QueueRef)
				}
				_, err = e.Topic(ctx, equeue.DLQTopic("g"))
				assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "the deleted group's dead-letter topic is gone")
				dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				require.NoError(t, err)
				assert.Empty(t, dl, "no dead letter of the deleted group is left to the new one")
				assert.Empty(t, redrivenKeys(t, f.FS, "g"), "no redriven mark of the deleted group")
			})
		}
	}
}

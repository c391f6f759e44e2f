package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRedrive_ToTopicOfAGroupMadeDuringItsDeletionWritesNothingAfterIt
// deletes a group the engine does not hold in memory (only its dead
// letters are left); while the deletion deletes its topics, the group is
// made again (CommitGroupOffsets) and a ToTopic Redrive lists the old
// dead letters and comes to send one. The commit waits for the deletion
// (TestDeleteGroup_OfAGroupNotInMemoryHoldsItsNameUntilItsTopicsAreGone)
// and so does the send: it holds the group's name gate shared, which the
// deletion holds from its start (groupdelete_gate.go). Once the deletion
// ends, the redrive stops with ErrGroupNotFound, having sent nothing to
// the topic and written no redriven mark, and the group is made again.
// Without the gate, the send found the dead-letter topic still there
// (the deletion had not reached it yet) and sent the deleted group's dead
// letter back to its topic during the deletion. Before the name was held,
// the commit made the group in memory at once, and a redrive that found
// it took only that group's gate, which the deletion never took.
func TestRedrive_ToTopicOfAGroupMadeDuringItsDeletionWritesNothingAfterIt(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := groupNotInMemory(t, f, false)
			before, err := e.Topic(ctx, "t")
			require.NoError(t, err)

			atTopics, resume := make(chan struct{}), make(chan struct{})
			equeue.OnDeleteGroupTopics(e, func(string) {
				close(atTopics)
				<-resume
			})
			t.Cleanup(func() { equeue.OnDeleteGroupTopics(e, nil) })
			deleted := make(chan error, 1)
			go func() { deleted <- e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}) }()
			<-atTopics // its keys are deleted, its topics not yet

			// The group is made again: the commit waits for the deletion.
			committed := make(chan error, 1)
			go func() {
				committed <- e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 0})
			}()
			eventually(t, 10*time.Second, func() bool { return equeue.GroupDeletionWaits(e) > 0 || len(committed) > 0 },
				"the commit waits for the deletion, or makes the group")

			type outcome struct {
				n   int
				err error
			}
			redriven := make(chan outcome, 1)
			go func() {
				n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
				redriven <- outcome{n, err}
			}()
			// The send waits on the name's gate the deletion holds (one
			// reference each), or, ungated, is done already.
			eventually(t, 10*time.Second, func() bool { return equeue.NameGateRefs(e, "g") >= 2 || len(redriven) > 0 },
				"the redrive's send waits for the deletion, or is done")
			close(resume)
			require.NoError(t, <-deleted)
			r := <-redriven
			assert.ErrorIs(t, r.err, equeue.ErrGroupNotFound, "the dead letters went with the group")
			assert.Zero(t, r.n, "nothing was sent during the deletion")

			_, err = e.Topic(ctx, equeue.DLQTopic("g"))
			assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
			after, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, before.Queues, after.Queues, "nothing was sent to the dead letter's topic")
			assert.Empty(t, redrivenKeys(t, f.FS, "g"), "no redriven mark of the deleted dead letters")
			require.NoError(t, <-committed)
			_, err = e.Group(ctx, "g")
			require.NoError(t, err, "the group is made again after its deletion")
		})
	}
}

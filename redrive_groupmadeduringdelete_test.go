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
// made again (CommitGroupOffsets), and a ToTopic Redrive lists the old
// dead letters, then the deletion ends before the redrive sends. The
// redrive must stop with ErrGroupNotFound, having sent nothing to the
// topic and written no redriven mark, as it does when the group stays out
// of memory (TestRedrive_ToTopicOfAGroupNotInMemoryRacingDeleteGroupWritesNothing).
// Before, a redrive that found the group in memory took only that group's
// gate, which the deletion, begun before the group was made, never took:
// the deleted dead letter went back after DeleteGroup returned, and its
// mark outlived the dead-letter topic. Since the deletion holds the name
// from its start (TestDeleteGroup_OfAGroupNotInMemoryHoldsItsNameUntilItsTopicsAreGone),
// the commit waits for it and makes the group only after it; the redrive
// still writes nothing.
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

			redriveRefusedAfter(t, e, true, "the deletion ended between the redrive's listing and its send", func() error {
				close(resume)
				return <-deleted
			})

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

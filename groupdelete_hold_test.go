package equeue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A member that joins while DeleteGroup deletes the group's retry and
// dead-letter topics (its keys and memory are gone already) makes the
// group again only once they are deleted. Joined before, its failed
// messages went into the retry topic about to be deleted, after its
// commits passed them: they were lost, never handled again.
func TestDeleteGroup_JoinWhileItsTopicsAreDeletedLosesNoRetry(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	opts := func(h equeue.Handler) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: h,
			RetryTopicDelays: []time.Duration{10 * time.Millisecond}, CommitInterval: 10 * time.Millisecond}
	}
	// The group, with its retry topic, and no member left.
	first, err := equeue.NewConsumer(e, opts(func(context.Context, *equeue.Message) error { return nil }))
	require.NoError(t, err)
	require.NoError(t, first.Start(ctx))
	require.NoError(t, first.Close())

	reached, release := make(chan struct{}), make(chan struct{})
	equeue.OnDeleteGroupTopics(e, func(string) {
		close(reached)
		<-release
	})
	deleted := make(chan error, 1)
	go func() { deleted <- e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}) }()
	select {
	case <-reached:
	case <-ctx.Done():
		t.Fatal("DeleteGroup did not reach its topics")
	}

	var attempts, successes atomic.Int32
	c, err := equeue.NewConsumer(e, opts(func(context.Context, *equeue.Message) error {
		if attempts.Add(1) == 1 {
			return errors.New("fails once")
		}
		successes.Add(1)
		return nil
	}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	started := make(chan error, 1)
	go func() { started <- c.Start(ctx) }()
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m")}}})
	require.NoError(t, err)
	// Either the join waits for the deletion, or (the defect) it made the
	// group again and its handler failed the message already.
	eventually(t, 10*time.Second, func() bool { return equeue.GroupDeletionWaits(e) > 0 || attempts.Load() > 0 },
		"the join waits for the deletion, or handles the message")
	close(release)
	require.NoError(t, <-deleted)
	require.NoError(t, <-started)

	eventually(t, 10*time.Second, func() bool { return successes.Load() == 1 },
		"the message is handled again after its failure: its retry was not lost")
}

// A group made again after DeleteGroup grants under epochs above every
// one the deleted group granted: a grant of the deleted group that a
// member still holds (a commit it sent before it saw the deletion) is
// fenced off the new group. With the epochs starting over, such a commit
// had the same epoch as the new grant and stored the deleted group's
// position in the new group, which then skipped everything below it
// instead of starting from its configured start.
func TestDeleteGroup_AGrantOfTheDeletedGroupIsFencedOffTheNewOne(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for i := 0; i < 5; i++ {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m")}}})
		require.NoError(t, err)
	}
	join := &equeue.JoinRequest{Group: "g", Member: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Incarnation: "1"}
	old, err := e.JoinGroup(ctx, join)
	require.NoError(t, err)
	require.Len(t, old.Queues, 1)
	require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}))

	// The member joins the group made again, and its commit of the
	// deleted group's position comes after.
	a, err := e.JoinGroup(ctx, join)
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	err = e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a", Offsets: []equeue.OffsetCommit{{Grant: old.Queues[0], Offset: 5}}})
	require.ErrorIs(t, err, equeue.ErrFenced, "a grant of the deleted group (epoch %d; the new one's is %d)", old.Queues[0].Epoch, a.Queues[0].Epoch)
	offs, err := e.FetchOffsets(ctx, "g", "a", a.Queues)
	require.NoError(t, err)
	require.Equal(t, int64(0), offs[0].Offset, "the new group starts at the oldest message")
}

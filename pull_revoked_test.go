package equeue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A group member's long-poll that wakes after the member lost the queue
// returns the refusal a pull started then would get, not the messages:
// the queue's new owner is the one to read them.
func TestPull_LongPollWakingAfterTheQueueWasTakenIsRefused(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	type outcome struct {
		res equeue.PullResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Group: "g", Member: "a", Epoch: a.Queues[0].Epoch, Wait: 20 * time.Second})
		done <- outcome{res, err}
	}()
	eventually(t, 10*time.Second, func() bool {
		return goroutineIn("equeue.(*Engine).Pull", "pull_revoked_test.go", "[select")
	}, "the pull waits for a message")
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "a"}))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	out := <-done
	assert.True(t, errors.Is(out.err, equeue.ErrNotMember) || errors.Is(out.err, equeue.ErrFenced), "a member that left gets no messages: %v", out.err)
	assert.Empty(t, out.res.Messages)
}

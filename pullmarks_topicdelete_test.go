package equeue_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestPullMarks_DeletedTopicsLeaveALiveMember: the engine remembers, per
// member and queue, what the member pulled (the bound of SendBack). The
// sweep drops the marks of members that are gone, but a member that stays
// kept the marks of every topic it pulled and that was deleted since (per
// job or reply topics), for as long as it lived. Deleting a topic now
// drops its marks; those of the topics that stay still bound SendBack.
func TestPullMarks_DeletedTopicsLeaveALiveMember(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	subs := []equeue.Subscription{{Topic: "keep"}}
	require.NoError(t, e.CreateTopic(ctx, "keep", 1))
	const jobs = 5
	for i := range jobs {
		name := fmt.Sprintf("job-%d", i)
		require.NoError(t, e.CreateTopic(ctx, name, 1))
		subs = append(subs, equeue.Subscription{Topic: name})
	}
	for _, s := range subs {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: s.Topic, Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: subs})
	require.NoError(t, err)
	require.Len(t, a.Queues, len(subs))
	var keep equeue.Grant
	for _, g := range a.Queues {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: g.Topic, Queue: g.Queue, Group: "g", Member: "m", Epoch: g.Epoch})
		require.NoError(t, err)
		require.Len(t, res.Messages, 1, "queue %s", g.QueueRef)
		if g.Topic == "keep" {
			keep = g
		}
	}
	require.Equal(t, len(subs), equeue.PullMarks(e), "one mark per queue pulled")

	for i := range jobs {
		require.NoError(t, e.DeleteTopic(ctx, fmt.Sprintf("job-%d", i)))
	}
	require.Equal(t, 1, equeue.PullMarks(e), "the marks of the deleted topics are dropped; the live topic's stays")

	sb, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: keep, Offset: 0, Cause: "boom"})
	require.NoError(t, err, "what the member pulled of a live topic may still be sent back")
	require.Equal(t, equeue.RetryTopic("g"), sb.Topic)
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: keep, Offset: 1})
	require.ErrorIs(t, err, equeue.ErrNotPulled, "and what it did not pull may not")
}

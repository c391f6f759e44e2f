package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Pulls that share one long-poll each wait their own wait: when the call
// came back with nothing for any of them (the shortest wait ended), every
// pull in it was answered "no new message", a pull whose own wait had
// long to run included. Now only the pull whose wait ended is answered;
// the other waits on, in the next call, and gets the message sent to its
// queue afterwards.
func TestPullMany_AnEmptyAnswerEndsOnlyThePullsWhoseWaitEnded(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 2)
	type outcome struct {
		res equeue.PullResult
		err error
	}
	pull := func(g equeue.Grant, wait time.Duration) chan outcome {
		out := make(chan outcome, 1)
		go func() {
			res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: g.Queue, Group: "g", Member: "m", Epoch: g.Epoch, Wait: wait})
			out <- outcome{res, err}
		}()
		return out
	}
	long := pull(a.Queues[1], time.Minute)
	short := pull(a.Queues[0], 300*time.Millisecond)

	s := <-short
	require.NoError(t, s.err)
	assert.Equal(t, equeue.PullNoNewMessage, s.res.Status, "nothing was sent to the short pull's queue")
	select {
	case l := <-long:
		t.Fatalf("the long pull was answered when the short one's wait ended: %+v, %v", l.res, l.err)
	default:
	}
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: a.Queues[1].Queue, Messages: []*equeue.Message{{Body: []byte("late")}}})
	require.NoError(t, err)
	l := <-long
	require.NoError(t, l.err)
	require.Equal(t, equeue.PullFound, l.res.Status, "the long pull came back empty before its wait ended")
	require.Len(t, l.res.Messages, 1)
	assert.Equal(t, "late", string(l.res.Messages[0].Body))
}

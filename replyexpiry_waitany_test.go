package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestReplyExpiry_WaitAnyMarksTheReplyTopicRead: a long-poll of a reply
// topic through WaitAny (what remote's PullMany waits in) counts as a read
// of it while it waits, as a Pull's wait does, so the idle reply topic
// expiry leaves the topic of a reader waiting there.
func TestReplyExpiry_WaitAnyMarksTheReplyTopicRead(t *testing.T) {
	e, _ := openEngine(t, "memory", &equeue.Options{ReplyTopicIdleTTL: time.Hour})
	ctx := ctxT(t)
	name := equeue.ReplyTopicPrefix + "pullmany"
	_, err := e.Route(ctx, name)
	require.NoError(t, err)

	wctx, cancel := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() {
		waited <- e.WaitAny(wctx, []*equeue.PullRequest{{Topic: name}}, time.Minute)
	}()
	eventually(t, 10*time.Second, func() bool { return equeue.ReplyPullsRunning(e, name) == 1 }, "WaitAny marks the reply topic read")
	equeue.ExpireReplyTopics(e, time.Now().Add(2*time.Hour))
	_, err = e.Topic(ctx, name)
	require.NoError(t, err, "a reply topic WaitAny was waiting on was deleted")

	cancel()
	require.ErrorIs(t, <-waited, context.Canceled)
	require.Zero(t, equeue.ReplyPullsRunning(e, name), "the mark ends with the wait")
}

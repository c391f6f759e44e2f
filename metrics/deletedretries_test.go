package metrics_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
)

// skipCopyOfDeletedTopic has group g send a message of topic "t" back to
// its retry topic, deletes "t", and has g pull the retry topic, which
// skips the copy: one retry copy of a deleted topic for e's Stats.
func skipCopyOfDeletedTopic(ctx context.Context, t *testing.T, e *equeue.Engine) {
	t.Helper()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("old")}}})
	require.NoError(t, err)
	retry := equeue.RetryTopic("g")
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", From: equeue.ConsumeFromEarliest,
		Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: retry}}})
	require.NoError(t, err)
	grants := map[string]equeue.Grant{}
	for _, q := range a.Queues {
		grants[q.Topic] = q
	}
	g := grants["t"]
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Group: "g", Member: "m", Epoch: g.Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, Attempts: 1, Cause: "failed"})
	require.NoError(t, err)
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	r := grants[retry]
	res, err = e.Pull(ctx, &equeue.PullRequest{Topic: retry, Queue: r.Queue, Group: "g", Member: "m", Epoch: r.Epoch})
	require.NoError(t, err)
	require.Equal(t, 1, res.DeletedTopicRetries, "the group's pull skips the copy")
}

// A retry copy of a deleted topic that a group's pull skipped is exported
// on deleted_topic_retries_total, not on expired_messages_total.
func TestCollector_DeletedTopicRetries(t *testing.T) {
	m := metrics.New()
	e, reg := openWith(t, m)
	require.NotNil(t, find(t, reg, "equeue_deleted_topic_retries_total", nil), "exported before any copy is skipped")
	skipCopyOfDeletedTopic(ctxT(t), t, e)
	require.Equal(t, 1.0, value(t, reg, "equeue_deleted_topic_retries_total", nil))
	require.Zero(t, value(t, reg, "equeue_expired_messages_total", nil))
}

package otel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/otel"
)

// A retry copy of a deleted topic that a group's pull skipped is reported
// on equeue.deleted_topic_retries, not on equeue.expired_messages.
func TestMetrics_DeletedTopicRetries(t *testing.T) {
	ctx := ctxT(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := otel.NewMetrics(&otel.MetricsOptions{MeterProvider: mp})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	e := openEngine(t, nil)
	m.Attach(e)

	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("old")}}})
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

	got := collect(t, reader)
	v, ok := intPoint(got["equeue.deleted_topic_retries"])
	assert.True(t, ok)
	assert.Equal(t, int64(1), v)
	v, ok = intPoint(got["equeue.expired_messages"])
	assert.True(t, ok)
	assert.Zero(t, v)
}

package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A topic's DefaultTTL counts, for a delayed message, from its scheduled
// delivery time (DeliverAt, or the send's time plus Delay), not from the
// send nor from when a consumer gets it: a message delayed longer than
// the default is delivered at its time, alive for the default after it,
// where counting from the send it would have expired unseen.
func TestDelay_TopicDefaultTTLShorterThanTheDelayCountsFromTheDeliveryTime(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	const ttl = 5 * time.Second // long enough that no pause of a loaded machine expires it before the pull
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{DefaultTTL: ttl}}))
	sent := time.Now()
	at := sent.Add(ttl + time.Second).Truncate(time.Millisecond)
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("d"), DeliverAt: at}}})
	require.NoError(t, err)

	var got []*equeue.Message
	eventually(t, waitLong, func() bool {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
		require.NoError(t, err)
		require.Zero(t, res.Expired, "expired before it was pulled")
		got = res.Messages
		return len(got) == 1
	}, "delivered at its time")
	m := got[0]
	assert.False(t, time.Now().Before(at), "never early")
	assert.True(t, m.DeliverAt.Equal(at), "delivery time %v, scheduled %v", m.DeliverAt, at)
	assert.True(t, m.ExpiresAt.Equal(at.Add(ttl)), "expires at %v: the delivery time plus the default", m.ExpiresAt)
	assert.True(t, m.ExpiresAt.After(sent.Add(ttl)), "counted from the send it would be gone")
}

package equeue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Retention keeping unconsumed messages, run after a reopen before the
// lagging group's member is back: the group, known only from its stored
// offsets and subscriptions, still holds back what it has not consumed,
// and its member, back, handles exactly that.
func TestHunt_RetentionAfterReopenWaitsForALaggingGroupNotYetBack(t *testing.T) {
	dir := t.TempDir()
	opts := &equeue.Options{Retention: equeue.RetentionPolicy{KeepUnconsumed: true, Interval: -1}}
	e, err := equeue.Open(dir, opts)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	send := func(e *equeue.Engine, from, to int) {
		for i := from; i < to; i++ {
			_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: fmt.Appendf(nil, "m%d", i)}}})
			require.NoError(t, err)
		}
	}
	var h huntRuns
	o := equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(_ context.Context, m *equeue.Message) error { h.add(m); return nil }}
	c, err := equeue.NewConsumer(e, o)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctxBG))
	send(e, 0, 3)
	eventually(t, waitLong, func() bool { return len(h.of("m2")) == 1 }, "the first three handled")
	require.NoError(t, c.Close()) // commits 3
	send(e, 3, 10)
	require.NoError(t, e.Close())

	e, err = equeue.Open(dir, opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	res, err := equeue.ApplyRetentionAt(ctxBG, e, opts.Retention, time.Now().Add(1000*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, int64(3), res.Deleted, "only what the group committed")
	c, err = equeue.NewConsumer(e, o)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctxBG))
	defer func() { require.NoError(t, c.Close()) }()
	eventually(t, waitLong, func() bool { return len(h.of("m9")) == 1 }, "the lagging group reads on")
	for i := range 10 {
		assert.Len(t, h.of(fmt.Sprintf("m%d", i)), 1, "m%d handled once", i)
	}
}

// A drop-oldest topic limit: delayed messages due during a downtime are
// made visible after the reopen and the topic is trimmed back to its
// limit, keeping the newest.
func TestHunt_DropOldestTrimsDelayedMessagesDueDuringDowntime(t *testing.T) {
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1,
		Limits: equeue.TopicLimits{MaxMessages: 2, Overflow: equeue.OverflowDropOldest}}))
	at := time.Now().Add(200 * time.Millisecond)
	for _, b := range []string{"d1", "d2"} {
		_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte(b), DeliverAt: at}}})
		require.NoError(t, err)
	}
	for _, b := range []string{"n1", "n2"} {
		_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte(b)}}})
		require.NoError(t, err)
	}
	require.NoError(t, e.Close())
	for time.Now().Before(at.Add(50 * time.Millisecond)) {
		time.Sleep(20 * time.Millisecond)
	}
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	bodies := func() []string {
		info, err := e.Topic(ctxBG, "t")
		require.NoError(t, err)
		res, err := e.Pull(ctxBG, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: info.Queues[0].MinOffset, Max: 10})
		require.NoError(t, err)
		var out []string
		for _, m := range res.Messages {
			out = append(out, string(m.Body))
		}
		return out
	}
	eventually(t, waitLong, func() bool { b := bodies(); return len(b) == 2 && b[0] == "d1" },
		"trimmed back to the newest two, got %v", func() any { return bodies() })
	assert.Equal(t, []string{"d1", "d2"}, bodies())
	info, err := e.Topic(ctxBG, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), info.Messages)
}

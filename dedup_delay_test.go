package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestDedup_DelayedDuplicateAnswersAsItsSendDid sends a delayed message and
// a delayed batch with IDs to a dedup topic, then sends them again before
// they are due, after they were moved to their queue and after a reopen:
// each time the answer is a duplicate naming the original send's answer
// (its queue, offset -1, Delayed, when it was accepted), as the README
// says, and nothing is stored twice.
func TestDedup_DelayedDuplicateAnswersAsItsSendDid(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour}))
	p := newProducer(t, e, nil)
	one := func(delay time.Duration) *equeue.Message {
		return &equeue.Message{Topic: "t", ID: "x", Body: []byte("x"), Delay: delay}
	}
	batch := func(delay time.Duration) []*equeue.Message {
		return []*equeue.Message{
			{Topic: "t", ID: "b1", Body: []byte("b1"), Delay: delay},
			{Topic: "t", ID: "b2", Body: []byte("b2"), Delay: delay},
		}
	}
	first, err := p.Send(ctx, one(300*time.Millisecond))
	require.NoError(t, err)
	require.True(t, first.Delayed)
	firstBatch, err := p.SendBatch(ctx, batch(300*time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, int64(-1), firstBatch.FirstOffset)
	require.True(t, firstBatch.Delayed)
	require.False(t, firstBatch.Duplicate)

	check := func(p *equeue.Producer, when string) {
		t.Helper()
		for _, delay := range []time.Duration{300 * time.Millisecond, 0} {
			again, err := p.Send(ctx, one(delay))
			require.NoError(t, err, when)
			assert.True(t, again.Duplicate, "%s: a duplicate", when)
			assert.True(t, again.Delayed, "%s: answered as its send was", when)
			assert.Equal(t, int64(-1), again.Offset, when)
			assert.Equal(t, first.Queue, again.Queue, when)
			assert.True(t, first.StoredAt.Equal(again.StoredAt), "%s: accepted at %v, answered %v", when, first.StoredAt, again.StoredAt)
			b, err := p.SendBatch(ctx, batch(delay))
			require.NoError(t, err, when)
			assert.Equal(t, firstBatch.Queue, b.Queue, when)
			assert.Equal(t, int64(-1), b.FirstOffset, when)
			assert.True(t, b.Duplicate, "%s: the batch a duplicate", when)
			assert.True(t, b.Delayed, "%s: the batch answered as its send was", when)
			assert.True(t, firstBatch.StoredAt.Equal(b.StoredAt), when)
		}
	}
	stored := func(e *equeue.Engine) map[string]int {
		t.Helper()
		n := map[string]int{}
		for q := range 2 {
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: q, Max: 100})
			require.NoError(t, err)
			for _, m := range res.Messages {
				n[m.ID]++
			}
		}
		return n
	}
	once := map[string]int{"x": 1, "b1": 1, "b2": 1}

	check(p, "pending")
	eventually(t, 20*time.Second, func() bool { return len(stored(e)) == 3 }, "moved to their queues")
	check(p, "moved")
	p.Close()
	e = reopen()
	p = newProducer(t, e, nil)
	check(p, "reopened")
	info, err := e.Delayed(ctx, 0)
	require.NoError(t, err)
	assert.Zero(t, info.Pending, "no duplicate waits in the delay log")
	assert.Equal(t, once, stored(e))
}

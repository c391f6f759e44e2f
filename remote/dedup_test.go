package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestClient_CreateTopicWithDedupWindow creates an idempotent topic through
// the client: a resent producer ID is acknowledged as a duplicate.
func TestClient_CreateTopicWithDedupWindow(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, c.CreateTopicWith(ctx, "idem", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour}))
	assert.ErrorIs(t, c.CreateTopicWith(ctx, "bad", equeue.TopicOptions{DedupWindow: -time.Second}), equeue.ErrInvalidArgument)
	assert.ErrorIs(t, c.CreateTopicWith(ctx, "idem", equeue.TopicOptions{}), equeue.ErrTopicExists)
	p, err := equeue.NewProducer(c, nil)
	require.NoError(t, err)
	defer p.Close()
	first, err := p.Send(ctx, &equeue.Message{Topic: "idem", ID: "x-1", Body: []byte("a")})
	require.NoError(t, err)
	again, err := p.Send(ctx, &equeue.Message{Topic: "idem", ID: "x-1", Body: []byte("a")})
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.Equal(t, first.Queue, again.Queue)
	assert.Equal(t, first.Offset, again.Offset)
	info, err := e.Topic(ctx, "idem")
	require.NoError(t, err)
	var n int64
	for _, q := range info.Queues {
		n += q.MaxOffset
	}
	assert.Equal(t, int64(1), n, "stored once")
}

// TestClient_DelayedDuplicateAnswersAsItsSendDid sends a delayed message with
// an ID to a dedup topic through a client, then sends it again (with Send
// and SendAsync) before it is due, after it was moved to its queue and
// after the engine was reopened: each answer is a duplicate naming the
// original send's answer (its queue, offset -1, Delayed), as in process,
// and the message is stored once.
func TestClient_DelayedDuplicateAnswersAsItsSendDid(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	e, err := equeue.Open("", &equeue.Options{Store: reopenBadger(t, dir)})
	require.NoError(t, err)
	s := startServer(t, e, "", nil)
	c := dial(t, s.addr, nil)
	require.NoError(t, c.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour}))
	p := newProducer(t, c)
	msg := func() *equeue.Message {
		return &equeue.Message{Topic: "t", ID: "x", Body: []byte("x"), Delay: 300 * time.Millisecond}
	}
	first, err := p.Send(ctx, msg())
	require.NoError(t, err)
	require.True(t, first.Delayed)
	check := func(p *equeue.Producer, when string) {
		t.Helper()
		again, err := p.Send(ctx, msg())
		require.NoError(t, err, when)
		async, err := p.SendAsync(ctx, msg()).Result(ctx)
		require.NoError(t, err, when)
		for _, r := range []equeue.SendResult{again, async} {
			assert.True(t, r.Duplicate, "%s: a duplicate", when)
			assert.True(t, r.Delayed, "%s: answered as its send was", when)
			assert.Equal(t, int64(-1), r.Offset, when)
			assert.Equal(t, first.Queue, r.Queue, when)
		}
		b, err := p.SendBatch(ctx, []*equeue.Message{msg()})
		require.NoError(t, err, when)
		assert.True(t, b.Duplicate, "%s: the batch a duplicate", when)
		assert.True(t, b.Delayed, "%s: the batch answered as its send was", when)
		assert.Equal(t, int64(-1), b.FirstOffset, when)
	}
	stored := func(e *equeue.Engine) int64 {
		t.Helper()
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		var n int64
		for _, q := range info.Queues {
			n += q.MaxOffset
		}
		return n
	}

	check(p, "pending")
	eventually(t, 20*time.Second, func() bool { return stored(e) == 1 }, "moved to its queue")
	check(p, "moved")
	require.NoError(t, p.Close())
	s.stop()
	require.NoError(t, e.Close())

	e = openEngine(t, &equeue.Options{Store: reopenBadger(t, dir)})
	s = startServer(t, e, "", nil)
	p = newProducer(t, dial(t, s.addr, nil))
	check(p, "reopened")
	assert.Equal(t, int64(1), stored(e), "stored once")
}

// TestClient_DelayedBatchRepeatingAnIDIsADuplicateOnlyOfItself: over a
// client as in process, a delayed batch [x, x] sent after a delayed x
// alone is refused with ErrPartialDuplicate and stores nothing, while a
// retry of a delayed [y, y] is a duplicate answered as its send was.
func TestClient_DelayedBatchRepeatingAnIDIsADuplicateOnlyOfItself(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	c := dial(t, s.addr, nil)
	require.NoError(t, c.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	p := newProducer(t, c)
	batch := func(ids ...string) []*equeue.Message {
		ms := make([]*equeue.Message, len(ids))
		for i, id := range ids {
			ms[i] = &equeue.Message{Topic: "t", ID: id, Body: []byte(id), Delay: time.Hour}
		}
		return ms
	}
	_, err := p.Send(ctx, batch("x")[0])
	require.NoError(t, err)
	first, err := p.SendBatch(ctx, batch("y", "y"))
	require.NoError(t, err)
	require.False(t, first.Duplicate)

	r, err := p.SendBatch(ctx, batch("x", "x"))
	require.ErrorIs(t, err, equeue.ErrPartialDuplicate, "answered %+v", r)
	r, err = p.SendBatch(ctx, batch("y", "y"))
	require.NoError(t, err)
	assert.True(t, r.Duplicate)
	assert.True(t, r.Delayed)
	assert.Equal(t, int64(-1), r.FirstOffset)
	assert.True(t, first.StoredAt.Equal(r.StoredAt))
	info, err := e.Delayed(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, 3, info.Pending, "nothing stored again")
}

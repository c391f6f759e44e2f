package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestDedup_ResendOfAMessageRetentionDeletedIsADuplicate: a message
// stored and then deleted (here by its topic's drop-oldest limit) was
// stored; a resend of its ID within the window says so (a duplicate at
// its offset, which no longer holds it) and stores nothing, for a single
// send and a SendBatch holding an ID twice, in process and after a
// reopen, and the queue's next offset stays past it. A SendBatch with one
// ID of a deleted message and a new one is refused as a partial duplicate
// and stores nothing.
func TestDedup_ResendOfAMessageRetentionDeletedIsADuplicate(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour,
		Limits: equeue.TopicLimits{MaxMessages: 2, Overflow: equeue.OverflowDropOldest}}))
	p := newProducer(t, e, nil)
	batch := func(ids ...string) []*equeue.Message {
		ms := make([]*equeue.Message, len(ids))
		for i, id := range ids {
			ms[i] = &equeue.Message{Topic: "t", ID: id, Body: []byte(id)}
		}
		return ms
	}
	x, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: "x", Body: []byte("x")})
	require.NoError(t, err)
	qq, err := p.SendBatch(ctx, batch("q", "q"))
	require.NoError(t, err)
	for _, id := range []string{"y", "z"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: id, Body: []byte(id)})
		require.NoError(t, err)
	}
	held := func(e *equeue.Engine) map[string][]crashPos { return crashReadTopic(t, ctx, e, "t") }
	want := map[string][]crashPos{"y": {{0, 3}}, "z": {{0, 4}}}
	eventually(t, waitLong, func() bool { return len(held(e)) == 2 }, "the limit deleted x and q, q")
	require.Equal(t, want, held(e))
	for round := range 2 {
		if round == 1 {
			require.NoError(t, p.Close())
			e = reopen()
			p = newProducer(t, e, nil)
		}
		r, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: "x", Body: []byte("x")})
		require.NoError(t, err)
		assert.True(t, r.Duplicate, "round %d: x was stored", round)
		assert.Equal(t, x.Offset, r.Offset, "round %d", round)
		b, err := p.SendBatch(ctx, batch("q", "q"))
		require.NoError(t, err)
		assert.True(t, b.Duplicate, "round %d: q, q was stored", round)
		assert.Equal(t, qq.FirstOffset, b.FirstOffset, "round %d", round)
		_, err = p.SendBatch(ctx, batch("x", "w"))
		require.ErrorIs(t, err, equeue.ErrPartialDuplicate, "round %d", round)
		assert.Equal(t, want, held(e), "round %d: nothing stored again", round)
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		assert.Equal(t, int64(5), info.Queues[0].MaxOffset, "round %d", round)
	}
}

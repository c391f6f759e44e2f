package equeue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// countingAppender wraps the engine with an Append of its own (so it owns
// no fast path: SendAsync runs on the producer's window) that counts the
// Appends and the messages they carry.
type countingAppender struct {
	*equeue.Engine
	appends atomic.Int64
}

func (b *countingAppender) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	b.appends.Add(1)
	return b.Engine.Append(ctx, req)
}

// pullVisible returns the messages of topic t's queue 0 visible now.
func pullVisible(t *testing.T, ctx context.Context, e *equeue.Engine, topic string) []*equeue.Message {
	t.Helper()
	var out []*equeue.Message
	for off := int64(0); ; {
		r, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Offset: off, Max: 1024})
		require.NoError(t, err)
		if len(r.Messages) == 0 {
			return out
		}
		out = append(out, r.Messages...)
		off = r.NextOffset
	}
}

// SendAsync on the producer's window (a broker without an AppendAsync of
// its own) crossed with deduplication: each ID sent three times at once,
// plain and delayed, is stored once; the other two are answered as
// duplicates at the original's place (a delayed one's: Delayed, offset
// -1); a send the engine refuses fails; every send frees its slot of a
// window of two, so a send after all of them goes through; each send is
// one Append, none repeated.
func TestProducer_AsyncWindowWithDedup(t *testing.T) {
	const ids, repeats = 16, 3
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{MaxMessageSize: 1 << 10})
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	b := &countingAppender{Engine: e}
	p := newProducer(t, b, &equeue.ProducerOptions{AsyncWindow: 2})

	futures := map[string][]*equeue.SendFuture{}
	sends := 0
	for r := range repeats {
		for i := range ids {
			id := fmt.Sprintf("id-%d", i)
			m := &equeue.Message{Topic: "t", ID: id, Body: []byte(id)}
			if i%2 == 1 {
				m.Delay = time.Hour
			}
			futures[id] = append(futures[id], p.SendAsync(ctx, m))
			sends++
			if r == 0 && i == ids/2 { // one the engine refuses, amid the others
				_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", ID: "big", Body: make([]byte, 2<<10)}).Result(ctx)
				require.ErrorIs(t, err, equeue.ErrMessageTooLarge)
				sends++
			}
		}
	}
	for i := range ids {
		id := fmt.Sprintf("id-%d", i)
		delayed := i%2 == 1
		var first *equeue.SendResult
		dups := 0
		for _, f := range futures[id] {
			res, err := f.Result(ctx)
			require.NoError(t, err, id)
			assert.Equal(t, id, res.ID)
			assert.Equal(t, delayed, res.Delayed, id)
			if delayed {
				assert.Equal(t, int64(-1), res.Offset, id)
			}
			if res.Duplicate {
				dups++
				continue
			}
			require.Nil(t, first, "%s stored twice", id)
			first = &res
		}
		require.NotNil(t, first, "%s stored", id)
		assert.Equal(t, repeats-1, dups, id)
		for _, f := range futures[id] {
			res, _ := f.Result(ctx)
			assert.Equal(t, first.Queue, res.Queue, id)
			assert.Equal(t, first.Offset, res.Offset, id)
		}
	}
	visible := pullVisible(t, ctx, e, "t")
	require.Len(t, visible, ids/2, "each plain ID stored once")
	seen := map[string]bool{}
	for _, m := range visible {
		require.False(t, seen[m.ID], "%s stored twice", m.ID)
		seen[m.ID] = true
	}
	d, err := e.Delayed(ctx, 1000)
	require.NoError(t, err)
	assert.Equal(t, ids/2, d.Pending, "each delayed ID pending once")

	res, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", ID: "after", Body: []byte("after")}).Result(ctx)
	require.NoError(t, err, "the window has room after every outcome")
	assert.False(t, res.Duplicate)
	assert.Equal(t, int64(sends+1), b.appends.Load(), "one Append per send")
}

// SendAsync on the producer's window crossed with delayed sends: sends
// delayed a long time are answered Delayed, offset -1, and stay pending;
// ones due soon become visible once, in a window of two; a bad delay is
// refused before a slot is taken; a send after all of them goes through.
func TestProducer_AsyncWindowWithDelayedSends(t *testing.T) {
	const n = 12
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &countingAppender{Engine: e}
	p := newProducer(t, b, &equeue.ProducerOptions{AsyncWindow: 2})

	var later, soon []*equeue.SendFuture
	for i := range n {
		later = append(later, p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint("later-", i)), Delay: time.Hour}))
		soon = append(soon, p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint("soon-", i)), DeliverAt: time.Now().Add(20 * time.Millisecond)}))
	}
	_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("bad"), Delay: -time.Second}).Result(ctx)
	require.ErrorIs(t, err, equeue.ErrInvalidDelay)
	for i, f := range append(later, soon...) {
		res, err := f.Result(ctx)
		require.NoError(t, err, "send %d", i)
		assert.True(t, res.Delayed, "send %d", i)
		assert.Equal(t, int64(-1), res.Offset, "send %d", i)
	}
	eventually(t, time.Minute, func() bool { return len(pullVisible(t, ctx, e, "t")) >= n }, "the sends due soon become visible")
	got := map[string]int{}
	for _, m := range pullVisible(t, ctx, e, "t") {
		got[string(m.Body)]++
	}
	for i := range n {
		assert.Equal(t, 1, got[fmt.Sprint("soon-", i)], "soon-%d visible once", i)
	}
	assert.Len(t, got, n, "only the sends due soon are visible")
	d, err := e.Delayed(ctx, 1000)
	require.NoError(t, err)
	assert.Equal(t, n, d.Pending, "the later sends pending, once each")

	_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("after")}).Result(ctx)
	require.NoError(t, err, "the window has room after every outcome")
	assert.Equal(t, int64(2*n+1), b.appends.Load(), "one Append per send, none for the refused one")
}

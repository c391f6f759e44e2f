package equeue_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

func TestDedup_ProducerIDStoredOnceWithinWindow(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 4, DedupWindow: time.Hour}))
	require.NoError(t, e.CreateTopic(ctx, "plain", 1))
	assert.ErrorIs(t, e.CreateTopicWith(ctx, "bad", equeue.TopicOptions{DedupWindow: -1}), equeue.ErrInvalidArgument)
	p := newProducer(t, e, nil)

	first, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: "order-1", Body: []byte("a")})
	require.NoError(t, err)
	assert.False(t, first.Duplicate)
	// A retry by a producer that did not see the ack: round robin would pick
	// another queue, but the original position is returned.
	again, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: "order-1", Body: []byte("a")})
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.Equal(t, first.Queue, again.Queue)
	assert.Equal(t, first.Offset, again.Offset)

	// Concurrent duplicates: exactly one is stored.
	var wg sync.WaitGroup
	var mu sync.Mutex
	dups := 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: "order-2", Body: []byte("b")})
			assert.NoError(t, err)
			mu.Lock()
			if r.Duplicate {
				dups++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	assert.Equal(t, 19, dups)

	// A batch is a duplicate only when every ID is known.
	b1, err := p.SendBatch(ctx, []*equeue.Message{{Topic: "t", ID: "b-1"}, {Topic: "t", ID: "b-2"}})
	require.NoError(t, err)
	b2, err := p.SendBatch(ctx, []*equeue.Message{{Topic: "t", ID: "b-1"}, {Topic: "t", ID: "b-2"}})
	require.NoError(t, err)
	assert.Equal(t, b1.FirstOffset, b2.FirstOffset)
	assert.Equal(t, b1.Queue, b2.Queue)

	// Topics without a window store every send.
	for range 2 {
		r, err := p.Send(ctx, &equeue.Message{Topic: "plain", ID: "same"})
		require.NoError(t, err)
		assert.False(t, r.Duplicate)
	}

	total := func(e *equeue.Engine, topic string) int64 {
		info, err := e.Topic(ctx, topic)
		require.NoError(t, err)
		var n int64
		for _, q := range info.Queues {
			n += q.MaxOffset
		}
		return n
	}
	assert.Equal(t, int64(4), total(e, "t"))
	assert.Equal(t, int64(2), total(e, "plain"))

	// The index survives a restart.
	e = reopen()
	p = newProducer(t, e, nil)
	r, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: "order-1"})
	require.NoError(t, err)
	assert.True(t, r.Duplicate)
	assert.Equal(t, first.Offset, r.Offset)
	assert.Equal(t, int64(4), total(e, "t"))
}

// TestDedup_BatchWithSomeIDsRecordsThem: a batch in which only some
// messages carry an ID stores them all (it cannot be a duplicate: the
// others have none), and the IDs it carries are recorded in the window at
// their own offsets, so a later send of one of them is a duplicate, after
// a reopen too. They used to be stored without being recorded, and a
// retry of one of them was stored a second time.
func TestDedup_BatchWithSomeIDsRecordsThem(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	p := newProducer(t, e, nil)
	b, err := p.SendBatch(ctx, []*equeue.Message{{Topic: "t", Body: []byte("a")}, {Topic: "t", ID: "x", Body: []byte("b")},
		{Topic: "t", Body: []byte("c")}, {Topic: "t", ID: "y", Body: []byte("d")}})
	require.NoError(t, err)
	require.Equal(t, int64(0), b.FirstOffset)
	assert.Equal(t, int64(2), e.Stats().DedupIDs)

	check := func(p *equeue.Producer) {
		t.Helper()
		for id, off := range map[string]int64{"x": 1, "y": 3} {
			r, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: id, Body: []byte("again")})
			require.NoError(t, err)
			assert.True(t, r.Duplicate, "%s was stored by the batch", id)
			assert.Equal(t, off, r.Offset, "%s is answered at its own offset", id)
		}
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		assert.Equal(t, int64(4), info.Queues[0].MaxOffset, "nothing stored again")
	}
	check(p)

	// The batch itself, sent again, is stored again: its messages without
	// an ID cannot be recognised.
	again, err := p.SendBatch(ctx, []*equeue.Message{{Topic: "t"}, {Topic: "t", ID: "x"}})
	require.NoError(t, err)
	assert.Equal(t, int64(4), again.FirstOffset)

	require.NoError(t, p.Close())
	e = reopen()
	p = newProducer(t, e, nil)
	r, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: "y"})
	require.NoError(t, err)
	assert.True(t, r.Duplicate)
	assert.Equal(t, int64(3), r.Offset)
	r, err = p.Send(ctx, &equeue.Message{Topic: "t", ID: "x"})
	require.NoError(t, err)
	assert.True(t, r.Duplicate)
	assert.Equal(t, int64(5), r.Offset, "the later entry of x answers")
}

func TestDedup_WindowExpires(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: 50 * time.Millisecond}))
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: "x"})
	require.NoError(t, err)
	time.Sleep(80 * time.Millisecond)
	r, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: "x"})
	require.NoError(t, err)
	assert.False(t, r.Duplicate, "outside the window the ID is new again")
	assert.Equal(t, int64(1), r.Offset)
}

// TestDedup_StatsCountTheIDsHeld: Stats().DedupIDs is the number of IDs
// the windows hold in memory: each ID once however often it is sent, none
// once expired, all of them again after a reopen, none of a deleted topic.
func TestDedup_StatsCountTheIDsHeld(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "long", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour}))
	require.NoError(t, e.CreateTopicWith(ctx, "short", equeue.TopicOptions{Queues: 1, DedupWindow: 50 * time.Millisecond}))
	require.NoError(t, e.CreateTopic(ctx, "none", 1))
	p := newProducer(t, e, nil)
	for _, id := range []string{"a", "b", "c", "a", "b"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: "long", ID: id})
		require.NoError(t, err)
		_, err = p.Send(ctx, &equeue.Message{Topic: "none", ID: id})
		require.NoError(t, err)
	}
	_, err := p.Send(ctx, &equeue.Message{Topic: "short", ID: "s"})
	require.NoError(t, err)
	assert.Equal(t, int64(4), e.Stats().DedupIDs)
	time.Sleep(80 * time.Millisecond)
	_, err = p.Send(ctx, &equeue.Message{Topic: "none", ID: "x"}) // a write runs expiry
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return e.Stats().DedupIDs == 3 }, "the short window's ID expired")
	require.NoError(t, p.Close())
	e = reopen()
	assert.Equal(t, int64(3), e.Stats().DedupIDs)

	// A deleted topic's window goes at the next write, not an hour later.
	require.NoError(t, e.DeleteTopic(ctx, "long"))
	p = newProducer(t, e, nil)
	_, err = p.Send(ctx, &equeue.Message{Topic: "none", ID: "y"})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return e.Stats().DedupIDs == 0 }, "the deleted topic's IDs are dropped")
}

// TestDedup_LongIDs: an ID of up to MaxIDBytes is deduplicated like any
// other; a longer one is refused with ErrInvalidArgument and stores
// nothing. (On a dedup topic the ID is part of a store key, and a key the
// store cannot take failed the whole write, every send packed with it,
// and in a cluster broke every node.)
func TestDedup_LongIDs(t *testing.T) {
	ctx := ctxT(t)
	for _, kind := range []string{"memory", "badger"} {
		t.Run(kind, func(t *testing.T) {
			e, _ := openEngine(t, kind, nil)
			require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
			p := newProducer(t, e, nil)
			max := strings.Repeat("i", equeue.MaxIDBytes)
			r, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: max})
			require.NoError(t, err)
			again, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: max})
			require.NoError(t, err)
			assert.True(t, again.Duplicate)
			assert.Equal(t, r.Offset, again.Offset)

			_, err = p.Send(ctx, &equeue.Message{Topic: "t", ID: max + "i"})
			require.ErrorIs(t, err, equeue.ErrInvalidArgument)
			_, err = p.SendBatch(ctx, []*equeue.Message{{Topic: "t", ID: "ok"}, {Topic: "t", ID: strings.Repeat("x", 70000)}})
			require.ErrorIs(t, err, equeue.ErrInvalidArgument)
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, int64(1), info.Queues[0].MaxOffset, "nothing of the refused sends is stored")
		})
	}
}

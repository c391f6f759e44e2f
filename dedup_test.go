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
	assert.False(t, b1.Duplicate)
	assert.True(t, b2.Duplicate, "SendBatch's result says the batch was a duplicate")
	assert.False(t, b2.Delayed)

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

// TestDedup_BatchPartlyInTheWindowStoresNothing: an append some of whose
// IDs the window holds and some not is refused with ErrPartialDuplicate
// and stores nothing (storing it stored the held IDs a second time), in
// process and after a reopen; its new IDs stay new.
func TestDedup_BatchPartlyInTheWindowStoresNothing(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: "a", Body: []byte("a")}}})
	require.NoError(t, err)
	for round := range 2 {
		if round == 1 {
			e = reopen()
		}
		for _, ms := range [][]*equeue.Message{
			{{ID: "a", Body: []byte("a again")}, {ID: "b", Body: []byte("b")}},
			{{ID: "b", Body: []byte("b")}, {ID: "a", Body: []byte("a again")}},
			{{ID: "a", Body: []byte("a again")}, {ID: "b", Body: []byte("b")}, {ID: "b", Body: []byte("b")}, {Delay: time.Hour}},
		} {
			if ms[len(ms)-1].Delay > 0 { // delayed alike
				ms = ms[:len(ms)-1]
				for _, m := range ms {
					m.Delay = time.Hour
				}
			}
			r, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: ms})
			require.ErrorIs(t, err, equeue.ErrPartialDuplicate, "%d messages: %+v", len(ms), r)
		}
		assert.Equal(t, []string{"a"}, queueBodies(t, e, "t", 0), "nothing stored again")
		info, err := e.Delayed(ctx, 0)
		require.NoError(t, err)
		assert.Zero(t, info.Pending, "nothing delayed")
	}
}

// TestDedup_BatchOfIDsStoredApartIsNotOneDuplicate: an append whose IDs
// the window holds all, but not as one append stored them (in other
// queues, another order, with other messages between), was answered as a
// duplicate at the first ID's position, so its result put the others
// where other messages are. It is refused with ErrPartialDuplicate; a
// retry of the very append, an ID in it twice included, is a duplicate
// at the append's own first position. So for delayed appends: a retry in
// another order is refused too (their entries hold their places in their
// send).
func TestDedup_BatchOfIDsStoredApartIsNotOneDuplicate(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour}))
	send := func(e *equeue.Engine, queue int, ids ...string) (equeue.AppendResult, error) {
		ms := make([]*equeue.Message, len(ids))
		for i, id := range ids {
			ms[i] = &equeue.Message{ID: id, Body: []byte(id)}
		}
		return e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: queue, Messages: ms})
	}
	for _, s := range []struct {
		queue int
		ids   []string
	}{{0, []string{"a"}}, {0, []string{"c"}}, {1, []string{"b"}}, {1, []string{"x", "y", "x"}}} {
		_, err := send(e, s.queue, s.ids...)
		require.NoError(t, err)
	}
	for round := range 2 {
		if round == 1 {
			e = reopen()
		}
		for _, ids := range [][]string{{"a", "b"}, {"c", "a"}, {"a", "x"}, {"x", "y"}} {
			r, err := send(e, 0, ids...)
			require.ErrorIs(t, err, equeue.ErrPartialDuplicate, "%v answered %+v", ids, r)
		}
		r, err := send(e, 0, "a", "c")
		require.NoError(t, err, "stored as one append, in order")
		assert.True(t, r.Duplicate)
		assert.Equal(t, 0, r.Queue)
		assert.Equal(t, int64(0), r.FirstOffset)
		r, err = send(e, 0, "x", "y", "x")
		require.NoError(t, err)
		assert.True(t, r.Duplicate)
		assert.Equal(t, 1, r.Queue)
		assert.Equal(t, int64(1), r.FirstOffset, "the append's first position, not its last x's")
		r, err = send(e, 0, "y", "x") // y and the later x are a run of one append
		require.NoError(t, err)
		assert.True(t, r.Duplicate)
		assert.Equal(t, int64(2), r.FirstOffset)
		assert.Equal(t, []string{"a", "c"}, queueBodies(t, e, "t", 0))
		assert.Equal(t, []string{"b", "x", "y", "x"}, queueBodies(t, e, "t", 1))
	}
	// A delayed append's retry is a duplicate too: one queue, no offset.
	delayed := []*equeue.Message{{ID: "d1", Delay: time.Hour}, {ID: "d2", Delay: time.Hour}}
	first, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: delayed})
	require.NoError(t, err)
	e = reopen()
	r, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: delayed})
	require.NoError(t, err)
	assert.True(t, r.Duplicate)
	assert.True(t, r.Delayed)
	assert.Equal(t, 1, r.Queue)
	assert.Equal(t, first.StoredAt, r.StoredAt)
	r, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: "d2", Delay: time.Hour}, {ID: "d1", Delay: time.Hour}}})
	require.ErrorIs(t, err, equeue.ErrPartialDuplicate, "another order than the send's: answered %+v", r)
}

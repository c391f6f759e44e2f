package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestDedup_DelayedAppendRepeatingAnIDIsADuplicateOnlyOfItself: a delayed
// send has no offsets, and its window entries held only its queue and
// time, so a delayed [x, x] after a delayed x (or [z, z] after [z, w, z],
// or [p, s] after two sends [p, q] and [r, s] in one write) matched them
// and was answered as a duplicate, storing nothing. As for sends that are
// not delayed, such an append is refused with ErrPartialDuplicate and
// stores nothing, while a retry of the very send is a duplicate (offset
// -1, Delayed), also after a reopen.
func TestDedup_DelayedAppendRepeatingAnIDIsADuplicateOnlyOfItself(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour}))
	msgs := func(delay time.Duration, ids ...string) []*equeue.Message {
		ms := make([]*equeue.Message, len(ids))
		for i, id := range ids {
			ms[i] = &equeue.Message{ID: id, Body: []byte(id), Delay: delay}
		}
		return ms
	}
	send := func(e *equeue.Engine, queue int, delay time.Duration, ids ...string) (equeue.AppendResult, error) {
		return e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: queue, Messages: msgs(delay, ids...)})
	}
	for _, s := range []struct {
		queue int
		ids   []string
	}{{0, []string{"x"}}, {1, []string{"a"}}, {1, []string{"y"}}, {1, []string{"z", "w", "z"}}} {
		r, err := send(e, s.queue, time.Hour, s.ids...)
		require.NoError(t, err)
		require.True(t, r.Delayed)
	}
	for round := range 2 {
		if round == 1 {
			e = reopen()
		}
		for _, delay := range []time.Duration{time.Hour, 0} {
			for _, ids := range [][]string{{"x", "x"}, {"y", "y"}, {"a", "y", "y"}, {"y", "y", "y"}, {"z", "z"}, {"w", "z", "z"}, {"a", "y"}} {
				r, err := send(e, 0, delay, ids...)
				assert.ErrorIs(t, err, equeue.ErrPartialDuplicate, "round %d, delay %v: %v answered %+v", round, delay, ids, r)
			}
			r, err := send(e, 0, delay, "z", "w", "z")
			require.NoError(t, err)
			assert.True(t, r.Duplicate)
			assert.True(t, r.Delayed)
			assert.Equal(t, 1, r.Queue)
			assert.Equal(t, int64(-1), r.FirstOffset)
			for _, id := range []string{"x", "z", "w"} {
				r, err := send(e, 0, delay, id)
				require.NoError(t, err)
				assert.True(t, r.Duplicate && r.Delayed, "%s alone: %+v", id, r)
			}
			r, err = send(e, 0, delay, "w", "z")
			require.NoError(t, err, "the end of a send, as for sends not delayed")
			assert.True(t, r.Duplicate && r.Delayed, "%+v", r)
		}
		info, err := e.Delayed(ctx, 0)
		require.NoError(t, err)
		assert.Equal(t, 6, info.Pending, "nothing stored again")
		assert.Empty(t, queueBodies(t, e, "t", 0))
		assert.Empty(t, queueBodies(t, e, "t", 1))
	}

	// Sends in one write of the writer share their time: each is a
	// duplicate only of itself.
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	inWrite, release := holdWriteOf(t, r, "hold")
	type answer struct {
		res equeue.AppendResult
		err error
	}
	appendAsync := func(ids ...string) <-chan answer {
		ch := make(chan answer, 1)
		r.E.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs(time.Hour, ids...)}, func(res equeue.AppendResult, err error) { ch <- answer{res, err} })
		return ch
	}
	held := appendAsync("hold")
	<-inWrite
	sends := []<-chan answer{appendAsync("p", "q"), appendAsync("r", "s"), appendAsync("u"), appendAsync("v"), appendAsync("m", "m")}
	retry := appendAsync("m", "m")
	release()
	require.NoError(t, (<-held).err)
	for _, s := range sends {
		a := <-s
		require.NoError(t, a.err)
		require.False(t, a.res.Duplicate)
	}
	d := <-retry
	require.NoError(t, d.err)
	assert.True(t, d.res.Duplicate && d.res.Delayed, "%+v", d.res)
	for _, ids := range [][]string{{"p", "s"}, {"q", "r"}, {"u", "v"}, {"p", "q", "r"}} {
		a := <-appendAsync(ids...)
		assert.ErrorIs(t, a.err, equeue.ErrPartialDuplicate, "%v answered %+v", ids, a.res)
	}
	for _, ids := range [][]string{{"p", "q"}, {"r", "s"}, {"u"}, {"m", "m"}, {"m"}} {
		a := <-appendAsync(ids...)
		require.NoError(t, a.err)
		assert.True(t, a.res.Duplicate, "%v answered %+v", ids, a.res)
	}
	info, err := r.E.Delayed(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, 9, info.Pending, "nothing stored again")
}

// TestDedup_DelayedRetryAfterItsSlotsWereTakenAgain: the delay log gives
// its slots out again once its records were moved and the engine
// reopened, so a record read at a delayed send's slots may be another
// send's. A retry of a delayed [x, x] whose slots a later send took was
// checked against that send's records and refused with
// ErrPartialDuplicate; it is a duplicate, and stores nothing.
func TestDedup_DelayedRetryAfterItsSlotsWereTakenAgain(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	batch := func(delay time.Duration, ids ...string) *equeue.AppendRequest {
		ms := make([]*equeue.Message, len(ids))
		for i, id := range ids {
			ms[i] = &equeue.Message{ID: id, Body: []byte(id), Delay: delay}
		}
		return &equeue.AppendRequest{Topic: "t", Messages: ms}
	}
	first, err := e.Append(ctx, batch(10*time.Millisecond, "x", "x"))
	require.NoError(t, err)
	eventually(t, 20*time.Second, func() bool { return len(queueBodies(t, e, "t", 0)) == 2 }, "moved to its queue")
	eventually(t, 20*time.Second, func() bool {
		info, err := e.Delayed(ctx, 0)
		return err == nil && info.Pending == 0
	}, "its delay index keys gone")
	e = reopen()
	_, err = e.Append(ctx, batch(time.Hour, "a", "b"))
	require.NoError(t, err)
	r, err := e.Append(ctx, batch(time.Hour, "x", "x"))
	require.NoError(t, err)
	assert.True(t, r.Duplicate && r.Delayed, "%+v", r)
	assert.True(t, first.StoredAt.Equal(r.StoredAt))
	assert.Equal(t, []string{"x", "x"}, queueBodies(t, e, "t", 0))
}

package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestDedup_AppendRepeatingAnIDIsADuplicateOnlyOfItself: the window keeps
// one entry per ID, the position of its latest message, so an append that
// holds an ID twice matched the window when only that latest position
// fitted. An append [x, x] after a send of x alone was answered as a
// duplicate "stored" from the offset before x's: another message's, or -1
// (Delayed) at the queue's start. It is refused with ErrPartialDuplicate
// and stores nothing; a retry of an append that did hold an ID twice is
// still a duplicate at its own first position, in the same batch as the
// original too, and after a reopen.
func TestDedup_AppendRepeatingAnIDIsADuplicateOnlyOfItself(t *testing.T) {
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
	}{{0, []string{"x"}}, {1, []string{"a"}}, {1, []string{"y"}}, {1, []string{"z", "w", "z"}}} {
		_, err := send(e, s.queue, s.ids...)
		require.NoError(t, err)
	}
	for round := range 2 {
		if round == 1 {
			e = reopen()
		}
		for _, ids := range [][]string{{"x", "x"}, {"y", "y"}, {"a", "y", "y"}, {"y", "y", "y"}, {"z", "z"}, {"w", "z", "z"}} {
			r, err := send(e, 0, ids...)
			assert.ErrorIs(t, err, equeue.ErrPartialDuplicate, "%v answered %+v", ids, r)
		}
		r, err := send(e, 0, "z", "w", "z")
		require.NoError(t, err)
		assert.True(t, r.Duplicate)
		assert.Equal(t, 1, r.Queue)
		assert.Equal(t, int64(2), r.FirstOffset)
		assert.Equal(t, []string{"x"}, queueBodies(t, e, "t", 0), "nothing stored again")
		assert.Equal(t, []string{"a", "y", "z", "w", "z"}, queueBodies(t, e, "t", 1), "nothing stored again")
	}

	// An original and its retry in one batch of the writer: the retry is a
	// duplicate of the original's records, which that batch writes.
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	inWrite, release := holdWriteOf(t, r, "hold")
	type answer struct {
		res equeue.AppendResult
		err error
	}
	appendAsync := func(ids ...string) <-chan answer {
		ms := make([]*equeue.Message, len(ids))
		for i, id := range ids {
			ms[i] = &equeue.Message{ID: id, Body: []byte(id)}
		}
		ch := make(chan answer, 1)
		r.E.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: ms}, func(res equeue.AppendResult, err error) { ch <- answer{res, err} })
		return ch
	}
	held := appendAsync("hold")
	<-inWrite
	single, orig, retry, apart := appendAsync("v"), appendAsync("u", "u"), appendAsync("u", "u"), appendAsync("v", "v")
	release()
	require.NoError(t, (<-held).err)
	require.NoError(t, (<-single).err)
	o := <-orig
	require.NoError(t, o.err)
	d := <-retry
	require.NoError(t, d.err)
	assert.True(t, d.res.Duplicate)
	assert.Equal(t, o.res.FirstOffset, d.res.FirstOffset)
	a := <-apart
	assert.ErrorIs(t, a.err, equeue.ErrPartialDuplicate, "answered %+v", a.res)
	assert.Equal(t, []string{"hold", "v", "u", "u"}, queueBodies(t, r.E, "t", 0))
}

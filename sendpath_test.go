package equeue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// The send path recycles its per-send state (command.go, getCommand). What
// a caller keeps of a result is its own, and a send given up while the
// writer holds it does not disturb the sends after it.

// TestAppend_ResultIDsAreTheCallers: the IDs of an Append's result stay as
// they were while later appends run.
func TestAppend_ResultIDsAreTheCallers(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)

	first, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("first")})
	require.NoError(t, err)
	require.Len(t, first.IDs, 1)
	id := string([]byte(first.IDs[0])) // a copy that nothing else can change
	for i := range 200 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs(fmt.Sprint("a", i))})
		require.NoError(t, err)
		_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "s%d", i)})
		require.NoError(t, err)
	}
	assert.Equal(t, id, first.IDs[0], "a later append changed an earlier result")

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 0, Max: 1})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, id, res.Messages[0].ID)
}

// TestSend_GivenUpWhileWrittenLeavesOthersIntact: a Send whose context ends
// while its message is in a store write returns the context's error, which
// also says the outcome is unknown (ErrIndeterminate: the message is then
// stored); the sends queued behind it each get the result of their own
// message.
func TestSend_GivenUpWhileWrittenLeavesOthersIntact(t *testing.T) {
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	p := newProducer(t, r.E, nil)

	inWrite, release := holdWriteOf(t, r, "given-up")
	ctx, cancel := context.WithCancel(ctxBG)
	defer cancel()
	givenUp := make(chan error, 1)
	go func() {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("given-up")})
		givenUp <- err
	}()
	<-inWrite // the writer holds the send
	cancel()
	gaveUp := <-givenUp
	require.ErrorIs(t, gaveUp, context.Canceled)
	require.ErrorIs(t, gaveUp, equeue.ErrIndeterminate, "the engine had taken the send: its outcome is unknown, not \"not stored\"")

	const n = 64
	var (
		wg      sync.WaitGroup
		results [n]equeue.SendResult
		errs    [n]error
	)
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = p.Send(ctxBG, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m%d", i)})
		})
	}
	release()
	wg.Wait()

	pulled, err := r.E.Pull(ctxBG, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 0, Max: 2 * n})
	require.NoError(t, err)
	byOffset := map[int64]*equeue.Message{}
	givenUpStored := 0
	for _, m := range pulled.Messages {
		byOffset[m.Offset] = m
		if string(m.Body) == "given-up" {
			givenUpStored++
		}
	}
	assert.Equal(t, 1, givenUpStored, "the given-up send's write went through: its message is there once")
	assert.Len(t, pulled.Messages, n+1)
	seen := map[string]bool{}
	for i := range n {
		require.NoError(t, errs[i], "send %d", i)
		m := byOffset[results[i].Offset]
		require.NotNil(t, m, "send %d: nothing at offset %d", i, results[i].Offset)
		assert.Equal(t, fmt.Sprintf("m%d", i), string(m.Body), "send %d: its result names another message", i)
		assert.Equal(t, m.ID, results[i].ID, "send %d", i)
		assert.False(t, seen[results[i].ID], "send %d: ID %s given twice", i, results[i].ID)
		seen[results[i].ID] = true
	}
}

// A context that ended before the engine took a send gives its error alone
// (not ErrIndeterminate), and nothing is stored; so does a SendBatch, and a
// SendAsync's future.
func TestSend_ContextEndedBeforeTheEngineTookIt(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	p := newProducer(t, e, nil)
	ctx, cancel := context.WithCancel(ctxBG)
	cancel()
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("a")})
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, equeue.ErrIndeterminate)
	_, err = p.SendBatch(ctx, []*equeue.Message{{Topic: "t", Body: []byte("b")}})
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, equeue.ErrIndeterminate)
	_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("c")}).Result(ctxBG)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, equeue.ErrIndeterminate)
	info, err := e.Topic(ctxBG, "t")
	require.NoError(t, err)
	require.Equal(t, int64(0), info.Queues[0].MaxOffset, "nothing stored")
}

// TestSend_AlternatingTopicsUseTheirOwnRoutes: a producer caches the route
// it used last; sends alternating between a topic of one queue and one of
// four still spread over the four queues of the second (by their keys).
func TestSend_AlternatingTopicsUseTheirOwnRoutes(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "one", 1))
	require.NoError(t, e.CreateTopic(ctx, "four", 4))
	p := newProducer(t, e, nil)
	queues := map[int]int{}
	for i := range 40 {
		res, err := p.Send(ctx, &equeue.Message{Topic: "one", Body: []byte("a")})
		require.NoError(t, err)
		require.Equal(t, 0, res.Queue)
		res, err = p.Send(ctx, &equeue.Message{Topic: "four", Keys: []string{fmt.Sprint("k", i)}, Body: []byte("b")})
		require.NoError(t, err)
		require.Equal(t, "four", res.Topic)
		queues[res.Queue]++
	}
	assert.Len(t, queues, 4, "keys spread over the four queues: %v", queues)
}

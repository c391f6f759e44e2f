package equeue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// replyRouteBroker is an engine whose Route of a reply topic can fail
// after the engine made the topic, as a remote call does whose context
// ended after the server ran it, or hold until released.
type replyRouteBroker struct {
	*equeue.Engine
	failNext atomic.Bool   // the next Route of a reply topic makes it, then fails
	hold     chan struct{} // when not nil, the first Route of a reply topic waits for it to close
	held     chan struct{} // closed when that Route waits
	holding  atomic.Bool
}

func (b *replyRouteBroker) Route(ctx context.Context, topic string) (equeue.Route, error) {
	if !equeue.IsReplyTopic(topic) {
		return b.Engine.Route(ctx, topic)
	}
	if b.hold != nil && b.holding.CompareAndSwap(false, true) {
		close(b.held)
		select {
		case <-b.hold:
		case <-ctx.Done():
			return equeue.Route{}, ctx.Err()
		}
	}
	r, err := b.Engine.Route(ctx, topic)
	if err == nil && b.failNext.CompareAndSwap(true, false) {
		return equeue.Route{}, context.DeadlineExceeded
	}
	return r, err
}

// A Request whose making of the reply topic failed after the broker made
// it (over remote, its context ended after the server ran the Route)
// leaves no orphan: the next Request makes the same topic again, which
// the broker answers with the one it has. Before, each failed Route left
// a reply topic that lasted until ReplyTopicIdleTTL.
func TestRequest_FailedRouteOfTheReplyTopicLeavesNoOrphan(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
	replier(t, e, "rpc", nil)
	b := &replyRouteBroker{Engine: e}
	b.failNext.Store(true)
	p := newProducer(t, b, nil)

	_, err := p.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("lost")})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	made := replyTopics(t, e)
	require.Len(t, made, 1, "the failed Route made the topic")

	rep, err := p.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("again")})
	require.NoError(t, err)
	assert.Equal(t, "re:again", string(rep.Body))
	assert.Equal(t, made, replyTopics(t, e), "one reply topic, the one made first")
	assert.Equal(t, made[0], equeue.ReplyTopicOf(p))

	require.NoError(t, p.Close())
	assert.Empty(t, replyTopics(t, e), "Close deletes the reply topic")
}

// A first Request whose context ends while another one makes the reply
// topic returns at once with ErrRequestTimeout: it does not wait for that
// Route. Before, it waited on the producer's lock for as long as the Route
// took, past its own deadline.
func TestRequest_WaitForTheReplyTopicEndsWithItsContext(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
	replier(t, e, "rpc", nil)
	b := &replyRouteBroker{Engine: e, hold: make(chan struct{}), held: make(chan struct{})}
	p := newProducer(t, b, nil)

	first := make(chan error, 1)
	go func() {
		_, err := p.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("first")})
		first <- err
	}()
	<-b.held // the first Request makes the reply topic

	ended, cancel := context.WithCancel(ctx)
	cancel()
	second := make(chan error, 1)
	go func() {
		_, err := p.Request(ended, &equeue.Message{Topic: "rpc", Body: []byte("second")})
		second <- err
	}()
	select {
	case err := <-second:
		assert.ErrorIs(t, err, equeue.ErrRequestTimeout)
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(20 * time.Second): // a bound for a hang, not a measure
		t.Error("a Request waited past its context for another's Route")
	}

	close(b.hold)
	require.NoError(t, <-first)
	assert.Len(t, replyTopics(t, e), 1)
}

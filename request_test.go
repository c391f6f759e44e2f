package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// replier starts a consumer of topic that answers every request with
// "re:"+body, through a producer on b.
func replier(t *testing.T, b equeue.Broker, topic string, hold <-chan struct{}) *atomic.Int64 {
	t.Helper()
	var answered atomic.Int64
	rp := newProducer(t, b, nil)
	startConsumer(t, b, equeue.ConsumerOptions{
		Group:         "responders",
		Subscriptions: []equeue.Subscription{{Topic: topic}},
		Concurrency:   16,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			if hold != nil {
				<-hold
			}
			err := equeue.Reply(ctx, rp, m, append([]byte("re:"), m.Body...), map[string]string{"n": m.Properties["n"]})
			if err == nil {
				answered.Add(1)
			}
			return err
		},
	})
	return &answered
}

func TestRequest_ThousandConcurrentAnswered(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		e, b := openOver(t, tr, "memory", nil)
		ctx := ctxT(t)
		require.NoError(t, e.CreateTopic(ctx, "rpc", 4))
		replier(t, b, "rpc", nil)
		p := newProducer(t, b, nil)

		const n = 1000
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := fmt.Sprintf("q%d", i)
				rep, err := p.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte(body), Properties: map[string]string{"n": body}})
				if err != nil {
					errs <- err
					return
				}
				if string(rep.Body) != "re:"+body || rep.Properties["n"] != body {
					errs <- fmt.Errorf("request %s got reply %q (%v)", body, rep.Body, rep.Properties)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		pending, dropped := equeue.PendingRequests(p)
		assert.Zero(t, pending, "no request left waiting")
		assert.Zero(t, dropped, "no reply dropped")

		// Close deletes the reply topic.
		topic := equeue.ReplyTopicOf(p)
		_, err := e.Topic(ctx, topic)
		require.NoError(t, err)
		require.NoError(t, p.Close())
		_, err = e.Topic(ctx, topic)
		assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	})
}

func TestRequest_TimeoutLeaksNothingAndLateReplyIsDropped(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		e, b := openOver(t, tr, "memory", nil)
		ctx := ctxT(t)
		require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
		hold := make(chan struct{})
		answered := replier(t, b, "rpc", hold)
		p := newProducer(t, b, nil)

		const n = 20
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Long enough for the send, even on a loaded machine; the
				// reply is held back until every request timed out.
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				_, err := p.Request(rctx, &equeue.Message{Topic: "rpc", Body: []byte("x")})
				assert.ErrorIs(t, err, equeue.ErrRequestTimeout)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			}()
		}
		wg.Wait()
		pending, _ := equeue.PendingRequests(p)
		assert.Zero(t, pending, "timed-out requests leave no map entry")

		// The handlers answer now: every reply is late and dropped.
		close(hold)
		eventually(t, 30*time.Second, func() bool {
			_, dropped := equeue.PendingRequests(p)
			return answered.Load() == n && dropped == n
		}, "late replies dropped")

		// A cancelled request leaves nothing either, and later ones work.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := p.Request(cctx, &equeue.Message{Topic: "rpc", Body: []byte("c")})
		require.Error(t, err)
		rep, err := p.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("ok")})
		require.NoError(t, err)
		assert.Equal(t, "re:ok", string(rep.Body))
		pending, _ = equeue.PendingRequests(p)
		assert.Zero(t, pending)
	})
}

func TestRequest_CloseFailsWaitingRequests(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
	p := newProducer(t, e, nil)
	done := make(chan error, 1)
	go func() {
		_, err := p.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("x")})
		done <- err
	}()
	eventually(t, 10*time.Second, func() bool { n, _ := equeue.PendingRequests(p); return n == 1 }, "request waiting")
	require.NoError(t, p.Close())
	assert.ErrorIs(t, <-done, equeue.ErrClosed)
	_, err := p.Request(ctx, &equeue.Message{Topic: "rpc"})
	assert.ErrorIs(t, err, equeue.ErrClosed)
}

func TestReply_Refusals(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	err := equeue.Reply(ctx, p, &equeue.Message{Topic: "t"}, nil, nil)
	assert.ErrorIs(t, err, equeue.ErrNotRequest)

	// Users cannot send to, or create, a reply topic by name.
	_, err = p.Send(ctx, &equeue.Message{Topic: equeue.ReplyTopicPrefix + "x"})
	assert.True(t, errors.Is(err, equeue.ErrInvalidName) || errors.Is(err, equeue.ErrInternalTopic), "got %v", err)
	assert.ErrorIs(t, e.CreateTopic(ctx, equeue.ReplyTopicPrefix+"x", 1), equeue.ErrInvalidName)
	assert.ErrorIs(t, e.DeleteReplyTopic(ctx, "t"), equeue.ErrInvalidName)
}

// TestRequest_ReplyTopicDeletedUnderIt: an admin deleting a requester's
// reply topic fails its waiting requests at once, and the next request
// makes a new reply topic.
func TestRequest_ReplyTopicDeletedUnderIt(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
	p := newProducer(t, e, nil)
	done := make(chan error, 1)
	go func() {
		_, err := p.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("x")})
		done <- err
	}()
	eventually(t, 10*time.Second, func() bool { n, _ := equeue.PendingRequests(p); return n == 1 }, "request waiting")
	first := equeue.ReplyTopicOf(p)
	require.NoError(t, e.DeleteTopic(ctx, first))
	assert.ErrorIs(t, <-done, equeue.ErrTopicNotFound)

	replier(t, e, "rpc", nil)
	rep, err := p.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("again")})
	require.NoError(t, err)
	assert.Equal(t, "re:again", string(rep.Body))
	assert.NotEqual(t, first, equeue.ReplyTopicOf(p))
}

// TestReply_ToAClosedRequesterIsDropped: the requester closed, its reply
// topic is gone; the reply is dropped without an error (a handler retrying
// it could never succeed) and does not bring the topic back.
func TestReply_ToAClosedRequesterIsDropped(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		e, b := openOver(t, tr, "memory", nil)
		ctx := ctxT(t)
		require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
		p := newProducer(t, b, nil)
		rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := p.Request(rctx, &equeue.Message{Topic: "rpc", Body: []byte("x")})
		require.ErrorIs(t, err, equeue.ErrRequestTimeout)
		topic := equeue.ReplyTopicOf(p)
		require.NoError(t, p.Close())

		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "rpc", Max: 1})
		require.NoError(t, err)
		require.Len(t, res.Messages, 1)
		rp := newProducer(t, b, nil)
		assert.NoError(t, equeue.Reply(ctx, rp, res.Messages[0], []byte("late"), nil))
		_, err = e.Topic(ctx, topic)
		assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	})
}

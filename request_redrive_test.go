package equeue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A request whose handler failed until it was dead-lettered is answered
// once it is redriven, whichever way: to the group's retry topic, or to its
// topic (ToTopic, the only way for an orderly group, as here). Before, a
// redrive to the topic sent a fresh message without the request's reply
// address, so the handler's Reply failed with ErrNotRequest, the request
// went back to the dead letters and its requester waited for nothing.
func TestRequest_RedrivenDeadLetterIsAnswered(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		e, b := openOver(t, tr, "memory", nil)
		ctx := ctxT(t)
		require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
		rp := newProducer(t, b, nil)
		var down atomic.Bool
		down.Store(true)
		replied := make(chan error, 1)
		startConsumer(t, b, equeue.ConsumerOptions{
			Group:         "svc",
			Subscriptions: []equeue.Subscription{{Topic: "rpc"}},
			Orderly:       true,
			MaxAttempts:   1,
			Handler: func(ctx context.Context, m *equeue.Message) error {
				if down.Load() {
					return errors.New("service down")
				}
				err := equeue.Reply(ctx, rp, m, append([]byte("re:"), m.Body...), nil)
				select {
				case replied <- err:
				default:
				}
				return err
			},
		})

		p := newProducer(t, b, nil)
		type answer struct {
			rep *equeue.Message
			err error
		}
		done := make(chan answer, 1)
		rctx, cancel := context.WithCancel(ctx) // ended by the test, not by time
		defer cancel()
		go func() {
			rep, err := p.Request(rctx, &equeue.Message{Topic: "rpc", Body: []byte("x")})
			done <- answer{rep, err}
		}()
		eventually(t, 30*time.Second, func() bool {
			dl, err := e.ListDeadLetters(ctx, "svc", equeue.ListDeadLettersRequest{})
			return err == nil && len(dl) == 1
		}, "the request dead-lettered")
		n, _ := equeue.PendingRequests(p)
		require.Equal(t, 1, n, "the requester waits while its request is a dead letter")

		down.Store(false)
		sent, err := e.Redrive(ctx, "svc", equeue.RedriveRequest{All: true, ToTopic: true})
		require.NoError(t, err)
		require.Equal(t, 1, sent)
		require.NoError(t, <-replied, "the redriven request keeps its reply address")
		a := <-done
		require.NoError(t, a.err)
		assert.Equal(t, "re:x", string(a.rep.Body))
	})
}

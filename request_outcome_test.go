package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRequest_TimeoutSaysWhetherTheRequestWasStored: a request whose
// context ends before it is stored says so (ErrRequestNotStored, safe to
// send again); one whose context ends while it waits for its reply, stored,
// does not. Both match ErrRequestTimeout, in-process and over remote alike.
func TestRequest_TimeoutSaysWhetherTheRequestWasStored(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		e, b := openOver(t, tr, "memory", nil)
		ctx := ctxT(t)
		require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
		// The hook ends the request's context as its send starts: the
		// engine never takes it.
		cancels := map[string]context.CancelFunc{}
		p := newProducer(t, b, &equeue.ProducerOptions{Hooks: []equeue.Hooks{{
			BeforeSend: func(_ context.Context, m *equeue.Message) {
				if c := cancels[string(m.Body)]; c != nil {
					c()
				}
			},
		}}})

		// Stored, then nobody answers.
		sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer scancel()
		_, err := p.Request(sctx, &equeue.Message{Topic: "rpc", Body: []byte("stored")})
		require.ErrorIs(t, err, equeue.ErrRequestTimeout)
		assert.NotErrorIs(t, err, equeue.ErrRequestNotStored, "the request was stored")
		info, err := e.Topic(ctx, "rpc")
		require.NoError(t, err)
		require.Equal(t, int64(1), info.Messages)

		// Its context ends before the send is taken.
		nctx, ncancel := context.WithCancel(ctx)
		cancels["not-stored"] = ncancel
		_, err = p.Request(nctx, &equeue.Message{Topic: "rpc", Body: []byte("not-stored")})
		require.ErrorIs(t, err, equeue.ErrRequestTimeout)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, equeue.ErrRequestNotStored, "nothing was stored: the error must say so")
		assert.NotErrorIs(t, err, equeue.ErrIndeterminate)
		info, err = e.Topic(ctx, "rpc")
		require.NoError(t, err)
		assert.Equal(t, int64(1), info.Messages, "the cancelled request was not stored")

		// A first request whose context ends before its reply topic is
		// made sent nothing either.
		q := newProducer(t, b, nil)
		dctx, dcancel := context.WithCancel(ctx)
		dcancel()
		_, err = q.Request(dctx, &equeue.Message{Topic: "rpc", Body: []byte("no-topic")})
		require.ErrorIs(t, err, equeue.ErrRequestTimeout)
		assert.ErrorIs(t, err, equeue.ErrRequestNotStored)
		info, err = e.Topic(ctx, "rpc")
		require.NoError(t, err)
		assert.Equal(t, int64(1), info.Messages)
	})
}

package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// panicAsyncBroker owns a fast path whose AppendAsync panics on the
// caller's goroutine without answering.
type panicAsyncBroker struct{ *equeue.Engine }

func (b panicAsyncBroker) FastPathOwner() any { return b }

func (panicAsyncBroker) AppendAsync(context.Context, *equeue.AppendRequest, func(equeue.AppendResult, error)) {
	panic("broker bug")
}

// A broker whose AppendAsync panics on the goroutine that called
// SendAsync, which recovers the panic, never answers: the send completes
// with an error matching ErrIndeterminate (the broker may have taken the
// message), not ErrGoexit, as nothing called runtime.Goexit, and the
// panic reaches the caller unchanged. Before, the future reported
// ErrGoexit.
func TestProducer_SendAsyncWhoseAppendAsyncPanicsIsNotAGoexit(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	seen := make(chan error, 1)
	hooks := []equeue.Hooks{{AfterSend: func(_ context.Context, _ *equeue.Message, _ equeue.SendResult, err error) { seen <- err }}}
	p := newProducer(t, panicAsyncBroker{e}, &equeue.ProducerOptions{Hooks: hooks})
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		p.SendAsync(ctx, &equeue.Message{Topic: "t"})
	}()
	assert.Equal(t, "broker bug", recovered, "the panic reaches the caller unchanged")
	err := waitOrDeadlock(t, seen, "AfterSend never ran")
	require.ErrorIs(t, err, equeue.ErrIndeterminate, "the broker may have taken the message")
	assert.NotErrorIs(t, err, equeue.ErrGoexit, "nothing called runtime.Goexit")
	require.NoError(t, p.Close(), "the send completed: Close does not wait for it")
}

package equeue_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// routeGoexitBroker's Route calls runtime.Goexit, as a t.FailNow in a test
// double does, once its first exitAfter calls returned.
type routeGoexitBroker struct {
	equeue.Broker
	exitAfter atomic.Int64
}

func (b *routeGoexitBroker) Route(ctx context.Context, topic string) (equeue.Route, error) {
	if b.exitAfter.Add(-1) < 0 {
		runtime.Goexit()
	}
	return b.Broker.Route(ctx, topic)
}

// A broker whose Route, called on a goroutine of the producer's to retry
// on a fresh route a SendAsync that met a stale one, calls
// runtime.Goexit never returns to the producer before the message went to
// the broker: the future fails with an error matching ErrGoexit, not
// ErrIndeterminate, as nothing was stored, and the producer goes on.
// Before, it reported ErrIndeterminate. On a broker with an AppendAsync
// of its own and on one without.
func TestProducer_SendAsyncWhoseRetryRouteCallsGoexitIsNotStored(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "staleRetry", false: "windowStaleRetry"}[fast], func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			stale := &staleOnceBroker{Engine: e}
			stale.stale.Store(1)
			var inner equeue.Broker = stale
			if fast {
				inner = &staleOnceAsyncBroker{stale}
			}
			b := &routeGoexitBroker{Broker: inner}
			b.exitAfter.Store(1) // the first pick's lookup returns, the retry's exits
			if fast {
				b2 := &routeGoexitFastBroker{b}
				p := newProducer(t, b2, nil)
				checkRouteGoexit(ctx, t, e, p)
				return
			}
			p := newProducer(t, b, nil)
			checkRouteGoexit(ctx, t, e, p)
		})
	}
}

// routeGoexitFastBroker is a routeGoexitBroker that owns the AppendAsync
// of the broker it wraps.
type routeGoexitFastBroker struct{ *routeGoexitBroker }

func (b routeGoexitFastBroker) FastPathOwner() any { return b }

func (b routeGoexitFastBroker) AppendAsync(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	b.Broker.(*staleOnceAsyncBroker).AppendAsync(ctx, req, cb)
}

func checkRouteGoexit(ctx context.Context, t *testing.T, e *equeue.Engine, p *equeue.Producer) {
	t.Helper()
	_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("gone")}).Result(ctx)
	require.ErrorIs(t, err, equeue.ErrGoexit)
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "the message never went to the broker")
	assert.Zero(t, storedCount(t, e), "nothing stored")
	res, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("kept")}).Result(ctx)
	require.NoError(t, err, "the producer goes on")
	assert.Equal(t, int64(0), res.Offset)
	require.NoError(t, p.Close())
}

// goexitAsyncBroker owns a fast path whose AppendAsync calls
// runtime.Goexit on the caller's goroutine, as a t.FailNow in a test
// double does, without answering.
type goexitAsyncBroker struct{ *equeue.Engine }

func (b goexitAsyncBroker) FastPathOwner() any { return b }

func (goexitAsyncBroker) AppendAsync(context.Context, *equeue.AppendRequest, func(equeue.AppendResult, error)) {
	runtime.Goexit()
}

// A broker whose AppendAsync calls runtime.Goexit on the goroutine that
// called SendAsync never answers: the send completes all the same, with
// an error matching ErrIndeterminate (the broker may have taken the
// message), which its AfterSend hook sees, and Close does not wait for
// it. Before, the send stayed pending for ever and Close never returned.
func TestProducer_SendAsyncWhoseAppendAsyncCallsGoexitCompletes(t *testing.T) {
	for _, hooked := range []bool{false, true} {
		t.Run(map[bool]string{false: "noHooks", true: "hooks"}[hooked], func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			seen := make(chan error, 1)
			var hooks []equeue.Hooks
			if hooked {
				hooks = []equeue.Hooks{{AfterSend: func(_ context.Context, _ *equeue.Message, _ equeue.SendResult, err error) { seen <- err }}}
			}
			p := newProducer(t, goexitAsyncBroker{e}, &equeue.ProducerOptions{Hooks: hooks})
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				p.SendAsync(ctx, &equeue.Message{Topic: "t"})
			}()
			waitOrDeadlock(t, ended, "the sender's goroutine never ended")
			if hooked {
				require.ErrorIs(t, waitOrDeadlock(t, seen, "AfterSend never ran"), equeue.ErrIndeterminate)
			}
			closed := make(chan error, 1)
			go func() { closed <- p.Close() }()
			require.NoError(t, waitOrDeadlock(t, closed, "Close waited for ever for the send"))
		})
	}
}

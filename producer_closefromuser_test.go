package equeue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// staleOnceAsyncBroker owns a fast path that, as its Append, answers its
// first stale appends as ones on a stale route, so that the producer
// retries them on a fresh route on a goroutine of its own, and appends
// the others.
type staleOnceAsyncBroker struct{ *staleOnceBroker }

func (b *staleOnceAsyncBroker) FastPathOwner() any { return b }

func (b *staleOnceAsyncBroker) AppendAsync(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	if b.stale.Add(-1) >= 0 {
		cb(equeue.AppendResult{}, fmt.Errorf("%w: the route changed", equeue.ErrQueueNotWritable))
		return
	}
	b.Engine.AppendAsync(ctx, req, cb)
}

// staleOnceBroker wraps the engine with an Append of its own (so it owns
// no fast path) that answers its first stale appends as ones on a stale
// route, so that the producer retries them on a fresh route.
type staleOnceBroker struct {
	*equeue.Engine
	stale atomic.Int64
}

func (b *staleOnceBroker) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	if b.stale.Add(-1) >= 0 {
		return equeue.AppendResult{}, fmt.Errorf("%w: the route changed", equeue.ErrQueueNotWritable)
	}
	return b.Engine.Append(ctx, req)
}

// sendWay sends one message to topic t on p in one of the producer's
// ways and returns the send's error.
type sendWay struct {
	name string
	send func(ctx context.Context, p *equeue.Producer) error
}

var sendWays = []sendWay{
	{"Send", func(ctx context.Context, p *equeue.Producer) error {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("closer")})
		return err
	}},
	{"SendBatch", func(ctx context.Context, p *equeue.Producer) error {
		_, err := p.SendBatch(ctx, []*equeue.Message{{Topic: "t", Body: []byte("closer")}})
		return err
	}},
	{"SendAsync", func(ctx context.Context, p *equeue.Producer) error {
		_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("closer")}).Result(ctx)
		return err
	}},
}

// storedCount is the number of messages topic t holds.
func storedCount(t *testing.T, e *equeue.Engine) int {
	t.Helper()
	r, err := e.Pull(ctxT(t), &equeue.PullRequest{Topic: "t", Offset: 0, Max: 10})
	require.NoError(t, err)
	return len(r.Messages)
}

// Producer.Close called from a send's BeforeSend hook returns without
// waiting for that send, which then ends with ErrClosed, not stored, and
// whose AfterSend hooks see it; the producer is closed. Before, on
// SendAsync, Close waited for ever for the send that ran the hook.
func TestProducer_CloseFromABeforeSendHook(t *testing.T) {
	for _, way := range sendWays {
		for _, window := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/window=%v", way.name, window), func(t *testing.T) {
				ctx := ctxT(t)
				e, _ := openEngine(t, "memory", nil)
				require.NoError(t, e.CreateTopic(ctx, "t", 2))
				var broker equeue.Broker = e
				if window {
					broker = &staleOnceBroker{Engine: e}
				}
				closed := make(chan error, 1)
				after := make(chan error, 1)
				var p *equeue.Producer
				hook := equeue.Hooks{
					BeforeSend: func(context.Context, *equeue.Message) { closed <- p.Close() },
					AfterSend: func(_ context.Context, _ *equeue.Message, _ equeue.SendResult, err error) {
						after <- err
					},
				}
				p = newProducer(t, broker, &equeue.ProducerOptions{Hooks: []equeue.Hooks{hook}})
				sent := make(chan error, 1)
				go func() { sent <- way.send(ctx, p) }()
				require.NoError(t, waitOrDeadlock(t, closed, "Close from a BeforeSend hook never returned"))
				require.ErrorIs(t, waitOrDeadlock(t, sent, "the send whose hook closed never returned"), equeue.ErrClosed)
				require.ErrorIs(t, waitOrDeadlock(t, after, "AfterSend never ran"), equeue.ErrClosed)
				assert.Zero(t, storedCount(t, e), "nothing stored")
				_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t"}).Result(ctx)
				require.ErrorIs(t, err, equeue.ErrClosed)
				require.NoError(t, p.Close(), "Close again, from outside")
			})
		}
	}
}

// Producer.Close called from the producer's QueueSelector returns without
// waiting for the send that asked it, which then ends with ErrClosed, not
// stored: on the caller's goroutine (Send, SendBatch, SendAsync), and on
// the producer's own when a send that met a stale route is retried on a
// fresh one (on a broker with an AppendAsync of its own and on one
// without). Before, on SendAsync, Close waited for ever for that send.
func TestProducer_CloseFromTheQueueSelector(t *testing.T) {
	type brokerWay struct {
		name  string
		stale int64 // the appends answered as ones on a stale route
		make  func(e *equeue.Engine, stale int64) equeue.Broker
	}
	brokers := []brokerWay{
		{"engine", 0, func(e *equeue.Engine, _ int64) equeue.Broker { return e }},
		{"window", 0, func(e *equeue.Engine, _ int64) equeue.Broker { return &staleOnceBroker{Engine: e} }},
		{"staleRetry", 1, func(e *equeue.Engine, n int64) equeue.Broker {
			b := &staleOnceAsyncBroker{&staleOnceBroker{Engine: e}}
			b.stale.Store(n)
			return b
		}},
		{"windowStaleRetry", 1, func(e *equeue.Engine, n int64) equeue.Broker {
			b := &staleOnceBroker{Engine: e}
			b.stale.Store(n)
			return b
		}},
	}
	for _, way := range sendWays {
		for _, bw := range brokers {
			t.Run(way.name+"/"+bw.name, func(t *testing.T) {
				ctx := ctxT(t)
				e, _ := openEngine(t, "memory", nil)
				require.NoError(t, e.CreateTopic(ctx, "t", 2))
				closed := make(chan error, 1)
				var (
					p     *equeue.Producer
					calls atomic.Int64
				)
				closeAt := 1 + bw.stale // the pick that closes: the retry's on a stale route
				sel := equeue.QueueSelectorFunc(func(_ *equeue.Message, writable []int) int {
					if calls.Add(1) == closeAt {
						closed <- p.Close()
					}
					return writable[0]
				})
				p = newProducer(t, bw.make(e, bw.stale), &equeue.ProducerOptions{Selector: sel})
				sent := make(chan error, 1)
				go func() { sent <- way.send(ctx, p) }()
				require.NoError(t, waitOrDeadlock(t, closed, "Close from the QueueSelector never returned"))
				require.ErrorIs(t, waitOrDeadlock(t, sent, "the send whose selector closed never returned"), equeue.ErrClosed)
				assert.Zero(t, storedCount(t, e), "nothing stored")
				require.NoError(t, p.Close(), "Close again, from outside")
			})
		}
	}
}

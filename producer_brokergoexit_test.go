package equeue_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// goexitBroker wraps the engine with an Append of its own (so it owns no
// fast path) that calls runtime.Goexit, as a t.FailNow in a test double
// does, for its next exits calls.
type goexitBroker struct {
	*equeue.Engine
	exits atomic.Int64
}

func (b *goexitBroker) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	if b.exits.Add(-1) >= 0 {
		runtime.Goexit()
	}
	return b.Engine.Append(ctx, req)
}

// staleGoexitBroker owns a fast path that answers every append as one on
// a stale route, so that the producer retries it through Append, which
// goexitBroker's is.
type staleGoexitBroker struct{ *goexitBroker }

func (b staleGoexitBroker) FastPathOwner() any { return b }

func (b staleGoexitBroker) AppendAsync(_ context.Context, _ *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	cb(equeue.AppendResult{}, fmt.Errorf("%w: the route changed", equeue.ErrQueueNotWritable))
}

// A broker whose Append, run for a SendAsync on a producer's goroutine,
// calls runtime.Goexit never returns to the producer: the future fails
// with an error matching ErrIndeterminate (the broker may have stored
// the message), the AfterSend hooks see it, the send's slot of the window
// is freed for the next send, and Close does not wait for it. Before, the
// future never completed. On the path of a broker without an AppendAsync
// of its own and on the retry of a send that met a stale route on one
// with it.
func TestProducer_SendAsyncCompletesWhenTheBrokersAppendCallsGoexit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		broker func(*goexitBroker) equeue.Broker
	}{
		{"window", func(b *goexitBroker) equeue.Broker { return b }},
		{"staleRouteRetry", func(b *goexitBroker) equeue.Broker { return staleGoexitBroker{b} }},
	} {
		for _, hooked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/hooks=%v", tc.name, hooked), func(t *testing.T) {
				ctx := ctxT(t)
				e, _ := openEngine(t, "memory", nil)
				require.NoError(t, e.CreateTopic(ctx, "t", 1))
				b := &goexitBroker{Engine: e}
				b.exits.Store(1)
				var hooks []equeue.Hooks
				seen := make(chan error, 2)
				if hooked {
					hooks = []equeue.Hooks{{AfterSend: func(_ context.Context, _ *equeue.Message, _ equeue.SendResult, err error) { seen <- err }}}
				}
				p, err := equeue.NewProducer(tc.broker(b), &equeue.ProducerOptions{AsyncWindow: 1, Hooks: hooks})
				require.NoError(t, err)
				closed := false
				defer func() {
					if !closed {
						_ = p.Close()
					}
				}()

				gone := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("gone")})
				kept := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("kept")}) // waits for gone's slot on the window path
				_, err = gone.Result(ctx)
				require.ErrorIs(t, err, equeue.ErrIndeterminate, "the Append that never returned")
				res, err := kept.Result(ctx)
				require.NoError(t, err, "the next send, after the slot was freed")
				r, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 10})
				require.NoError(t, err)
				require.Len(t, r.Messages, 1, "only the kept send reached the engine")
				assert.Equal(t, "kept", string(r.Messages[0].Body))
				assert.Equal(t, res.Offset, r.Messages[0].Offset)
				if hooked {
					// In either order: on the window path, kept's send may
					// complete before gone's deferred completion is queued,
					// once gone's slot is freed.
					first, second := <-seen, <-seen
					if first == nil {
						first, second = second, first
					}
					require.ErrorIs(t, first, equeue.ErrIndeterminate, "AfterSend saw the failure")
					require.NoError(t, second, "AfterSend saw the kept send")
				}
				closed = true
				require.NoError(t, p.Close(), "Close waits for no send")
			})
		}
	}
}

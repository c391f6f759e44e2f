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

// TestProducer_StartSendThatPanicsEndsTheEarlierStarts: with chained trace
// hooks, a StartSend that panics, or calls runtime.Goexit, after an
// earlier one returned its end left that end uncalled, and the earlier
// tracer's span open: the send's ends were known only once every
// StartSend returned. Every end already obtained now runs once, with an
// error matching ErrHookPanic, and the panic still reaches the caller, its
// value unchanged (a Goexit still ends the caller's goroutine).
func TestProducer_StartSendThatPanicsEndsTheEarlierStarts(t *testing.T) {
	sends := map[string]func(context.Context, *equeue.Producer){
		"Send": func(ctx context.Context, p *equeue.Producer) {
			_, _ = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
		},
		"SendBatch": func(ctx context.Context, p *equeue.Producer) {
			_, _ = p.SendBatch(ctx, []*equeue.Message{{Topic: "t", Body: []byte("x")}, {Topic: "t", Body: []byte("y")}})
		},
		"SendAsync": func(ctx context.Context, p *equeue.Producer) {
			_, _ = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(ctx)
		},
	}
	for _, send := range []string{"Send", "SendBatch", "SendAsync"} {
		for _, how := range []string{"panic", "Goexit"} {
			t.Run(send+"/"+how, func(t *testing.T) {
				ctx := ctxT(t)
				e, _ := openEngine(t, "memory", nil)
				require.NoError(t, e.CreateTopic(ctx, "t", 1))
				ended := make(chan error, 10)
				var later atomic.Int32
				failing := equeue.Hooks{Trace: &equeue.TraceHooks{StartSend: func(ctx context.Context, _ []*equeue.Message) (context.Context, func([]equeue.SendResult, error)) {
					if how == "panic" {
						panic("boom start")
					}
					runtime.Goexit()
					return ctx, nil
				}}}
				// The hook after the one that fails never starts.
				unreached := equeue.Hooks{Trace: &equeue.TraceHooks{StartSend: func(ctx context.Context, _ []*equeue.Message) (context.Context, func([]equeue.SendResult, error)) {
					later.Add(1)
					return ctx, nil
				}}}
				p := newProducer(t, e, &equeue.ProducerOptions{Hooks: []equeue.Hooks{endRecorder(ended), endRecorder(ended), failing, unreached}})

				exited := make(chan any, 1)
				var returned atomic.Bool
				go func() {
					defer func() { exited <- recover() }()
					sends[send](ctx, p)
					returned.Store(true)
				}()
				p1 := <-exited
				assert.False(t, returned.Load(), "the send returned")
				if how == "panic" {
					assert.Equal(t, "boom start", p1, "the panic reaches the caller, its value unchanged")
				} else {
					assert.Nil(t, p1, "a Goexit is no panic")
				}
				for i := 0; i < 2; i++ {
					select {
					case err := <-ended:
						assert.ErrorIs(t, err, equeue.ErrHookPanic)
						if how == "panic" {
							assert.ErrorContains(t, err, "boom start")
						} else {
							assert.ErrorContains(t, err, "runtime.Goexit")
						}
					default:
						t.Fatalf("%d of the 2 earlier starts were ended", i)
					}
				}
				assert.Empty(t, ended, "ended more than once")
				assert.Equal(t, int32(0), later.Load(), "a later StartSend ran")
				assert.Equal(t, uint64(0), e.Stats().ConsumerHookPanics, "the panic went on to the caller: nothing recovered")
				require.NoError(t, p.Close(), "Close waits for no send that never started")
			})
		}
	}
}

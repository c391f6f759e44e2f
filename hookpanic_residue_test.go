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

// TestProducer_SendAsyncHookPanicsAreCounted: a SendAsync's AfterSend and
// trace end run on the engine's goroutines, where their panics are
// recovered into the future's error. Unlike the panics that the engine's
// consumers recover, they were not counted in Stats; they now are, once
// each, before the future completes (through a Namespace view too).
func TestProducer_SendAsyncHookPanicsAreCounted(t *testing.T) {
	for _, over := range []string{"engine", "namespace"} {
		t.Run(over, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			var b equeue.Broker = e
			if over == "namespace" {
				n, err := e.Namespace("tenant")
				require.NoError(t, err)
				require.NoError(t, n.CreateTopic(ctx, "t", 1))
				b = n
			} else {
				require.NoError(t, e.CreateTopic(ctx, "t", 1))
			}
			p := newProducer(t, b, &equeue.ProducerOptions{Hooks: []equeue.Hooks{{
				AfterSend: func(context.Context, *equeue.Message, equeue.SendResult, error) { panic("boom after") },
				Trace: &equeue.TraceHooks{StartSend: func(ctx context.Context, _ []*equeue.Message) (context.Context, func([]equeue.SendResult, error)) {
					return ctx, func([]equeue.SendResult, error) { panic("boom end") }
				}},
			}}})
			_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(ctx)
			require.ErrorIs(t, err, equeue.ErrHookPanic)
			assert.Equal(t, uint64(2), e.Stats().ConsumerHookPanics, "both panics counted when the future completed")
			require.NoError(t, p.Close())
		})
	}
}

// TestProducer_HookGoexitOnTheCallersGoroutineEndsTheTrace: a BeforeSend
// (or a Send's or SendBatch's AfterSend) that calls runtime.Goexit, as
// t.FailNow does, ends the caller's goroutine. The send's trace was left
// open: its end ran only for a panic. It is now ended once, with an error
// matching ErrHookPanic, and the caller's goroutine still ends, running
// its deferred calls and nothing after the send.
func TestProducer_HookGoexitOnTheCallersGoroutineEndsTheTrace(t *testing.T) {
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
	for _, c := range []struct{ send, hook string }{
		{"Send", "BeforeSend"}, {"SendBatch", "BeforeSend"}, {"SendAsync", "BeforeSend"},
		{"Send", "AfterSend"}, {"SendBatch", "AfterSend"},
	} {
		t.Run(c.send+"/"+c.hook, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			ended := make(chan error, 10)
			h := equeue.Hooks{}
			if c.hook == "BeforeSend" {
				h.BeforeSend = func(context.Context, *equeue.Message) { runtime.Goexit() }
			} else {
				h.AfterSend = func(context.Context, *equeue.Message, equeue.SendResult, error) { runtime.Goexit() }
			}
			p := newProducer(t, e, &equeue.ProducerOptions{Hooks: []equeue.Hooks{endRecorder(ended), h}})

			exited := make(chan struct{})
			var returned atomic.Bool
			go func() {
				defer close(exited)
				sends[c.send](ctx, p)
				returned.Store(true)
			}()
			<-exited
			assert.False(t, returned.Load(), "the send returned: the caller's goroutine did not end")
			select {
			case err := <-ended:
				assert.ErrorIs(t, err, equeue.ErrHookPanic)
				assert.ErrorContains(t, err, "runtime.Goexit")
			default:
				t.Fatal("the send's trace was not ended")
			}
			assert.Empty(t, ended, "ended more than once")
			require.NoError(t, p.Close())
		})
	}
}

// TestProducer_ChainedSendEndsThatPanicOnTheCallersGoroutine: the ends of
// two trace hooks of a Send or SendBatch both panic on the caller's
// goroutine. Both ran, but the caller recovered the panic of the end
// called last, the second panic in time, which replaced the first: the
// first panic now goes on to the caller with its value, as when any
// other hook panics there, every end still runs, and the later panic is
// recovered and counted in Stats. After a BeforeSend's panic, which
// reaches the caller, both ends' panics are recovered and counted.
func TestProducer_ChainedSendEndsThatPanicOnTheCallersGoroutine(t *testing.T) {
	sends := map[string]func(context.Context, *equeue.Producer){
		"Send": func(ctx context.Context, p *equeue.Producer) {
			_, _ = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
		},
		"SendBatch": func(ctx context.Context, p *equeue.Producer) {
			_, _ = p.SendBatch(ctx, []*equeue.Message{{Topic: "t", Body: []byte("x")}, {Topic: "t", Body: []byte("y")}})
		},
	}
	for _, c := range []struct {
		send, before string // before: the BeforeSend's panic, if any
		first        string
		counted      uint64
	}{
		{send: "Send", first: "boom end b", counted: 1},
		{send: "SendBatch", first: "boom end b", counted: 1},
		{send: "Send", before: "boom before", first: "boom before", counted: 2},
		{send: "SendBatch", before: "boom before", first: "boom before", counted: 2},
	} {
		t.Run(c.send+"/"+c.first, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			var ran atomic.Int32
			panicky := func(name string) equeue.Hooks {
				return equeue.Hooks{Trace: &equeue.TraceHooks{StartSend: func(ctx context.Context, _ []*equeue.Message) (context.Context, func([]equeue.SendResult, error)) {
					return ctx, func([]equeue.SendResult, error) {
						ran.Add(1)
						panic("boom end " + name)
					}
				}}}
			}
			// The ends are called in the reverse order of their starts: b's first.
			hooks := []equeue.Hooks{panicky("a"), panicky("b")}
			if c.before != "" {
				hooks = append(hooks, equeue.Hooks{BeforeSend: func(context.Context, *equeue.Message) { panic(c.before) }})
			}
			p := newProducer(t, e, &equeue.ProducerOptions{Hooks: hooks})

			assert.PanicsWithValue(t, c.first, func() { sends[c.send](ctx, p) }, "the first panic reaches the caller")
			assert.Equal(t, int32(2), ran.Load(), "every end ran")
			assert.Equal(t, c.counted, e.Stats().ConsumerHookPanics, "the panics left out were counted")
			require.NoError(t, p.Close())
		})
	}
}

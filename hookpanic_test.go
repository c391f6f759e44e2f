package equeue_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestProducer_SendAsyncHookPanicIsTheFuturesError: a SendAsync's
// AfterSend hooks and trace end run where the send completes: in the
// engine's completion of the write, or on a goroutine of the producer's
// own (a broker without fast paths). A panic there ended the program. It
// is now recovered and the future's error (ErrHookPanic), the result still
// says where the message was stored, the other hooks still run, and the
// engine goes on serving sends.
func TestProducer_SendAsyncHookPanicIsTheFuturesError(t *testing.T) {
	for _, over := range []string{"engine", "wrapper"} {
		t.Run(over, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			var b equeue.Broker = e
			if over == "wrapper" {
				b = &busyBroker{Engine: e}
			}
			var after, ended atomic.Int32
			p := newProducer(t, b, &equeue.ProducerOptions{Hooks: []equeue.Hooks{
				{AfterSend: func(context.Context, *equeue.Message, equeue.SendResult, error) { panic("boom after") }},
				{
					AfterSend: func(context.Context, *equeue.Message, equeue.SendResult, error) { after.Add(1) },
					Trace: &equeue.TraceHooks{StartSend: func(ctx context.Context, _ []*equeue.Message) (context.Context, func([]equeue.SendResult, error)) {
						return ctx, func([]equeue.SendResult, error) { ended.Add(1); panic("boom end") }
					}},
				},
			}})
			var (
				res equeue.SendResult
				err error
			)
			require.NotPanics(t, func() {
				res, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(ctx)
			})
			require.ErrorIs(t, err, equeue.ErrHookPanic)
			assert.ErrorContains(t, err, "boom after")
			assert.ErrorContains(t, err, "boom end")
			assert.NotEmpty(t, res.ID, "the result says the message was stored")
			assert.Equal(t, "t", res.Topic)
			assert.Equal(t, int64(0), res.Offset)
			assert.Equal(t, int32(1), after.Load(), "the hook after the one that panicked ran")
			assert.Equal(t, int32(1), ended.Load())

			pr, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 0, Max: 10})
			require.NoError(t, err)
			require.Len(t, pr.Messages, 1)
			assert.Equal(t, res.ID, pr.Messages[0].ID)

			// The engine serves the next sends; a failed send keeps its own error.
			next, err := newProducer(t, b, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("y")})
			require.NoError(t, err)
			assert.Equal(t, int64(1), next.Offset)
			_, err = p.SendAsync(ctx, &equeue.Message{Topic: "none", Body: []byte("z")}).Result(ctx)
			assert.ErrorIs(t, err, equeue.ErrHookPanic)
			assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
			require.NoError(t, p.Close())
		})
	}
}

// TestConsumer_HookPanicIsLogged: a consumer's hooks (BeforeHandle,
// AfterHandle, StartHandle and its end) run on the consumer's goroutines,
// where a panic ended the program. It is now recovered, logged
// (ErrHookPanic) and counted in Stats, the other hooks still run, and the
// message's outcome is its handler's (or its batch handler's): handled
// once, and the group's offset moves past it.
func TestConsumer_HookPanicIsLogged(t *testing.T) {
	for _, c := range []struct{ where, handler string }{
		{"BeforeHandle", "one"}, {"AfterHandle", "one"}, {"StartHandle", "one"}, {"end", "one"},
		{"BeforeHandle", "batch"}, {"AfterHandle", "batch"}, {"StartHandle", "batch"}, {"end", "batch"},
	} {
		where := c.where
		t.Run(where+"/"+c.handler, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
			require.NoError(t, err)

			boom := func(w string) {
				if w == where {
					panic("boom " + w)
				}
			}
			var after atomic.Int32
			ended := make(chan equeue.HandleOutcome, 10)
			hooks := []equeue.Hooks{
				{
					BeforeHandle: func(context.Context, *equeue.Message) { boom("BeforeHandle") },
					AfterHandle:  func(context.Context, *equeue.Message, error, time.Duration) { boom("AfterHandle") },
					Trace: &equeue.TraceHooks{StartHandle: func(ctx context.Context, _ *equeue.Message, _ equeue.Delivery) (context.Context, func(equeue.HandleOutcome)) {
						boom("StartHandle")
						return ctx, func(equeue.HandleOutcome) { boom("end") }
					}},
				},
				{
					AfterHandle: func(context.Context, *equeue.Message, error, time.Duration) { after.Add(1) },
					Trace: &equeue.TraceHooks{StartHandle: func(ctx context.Context, _ *equeue.Message, _ equeue.Delivery) (context.Context, func(equeue.HandleOutcome)) {
						return ctx, func(o equeue.HandleOutcome) { ended <- o }
					}},
				},
			}
			var logs syncBuffer
			handled := make(chan string, 10)
			o := equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				Hooks: hooks, Logger: slog.New(slog.NewTextHandler(&logs, nil)), CommitInterval: 50 * time.Millisecond}
			if c.handler == "one" {
				o.Handler = func(_ context.Context, m *equeue.Message) error {
					handled <- string(m.Body)
					return nil
				}
			} else {
				o.BatchHandler = func(_ context.Context, ms []*equeue.Message) error {
					for _, m := range ms {
						handled <- string(m.Body)
					}
					return nil
				}
			}
			startConsumer(t, e, o)

			select {
			case body := <-handled:
				assert.Equal(t, "x", body)
			case <-time.After(waitLong):
				t.Fatal("the message was not handled")
			}
			select {
			case o := <-ended:
				assert.Equal(t, equeue.OutcomeHandled, o.Outcome)
				assert.NoError(t, o.Err)
			case <-time.After(waitLong):
				t.Fatal("the handling's trace did not end")
			}
			eventually(t, waitLong, func() bool { return queueRow(t, e, "g").Committed == 1 }, "the offset was not committed past the message")
			assert.Equal(t, int32(1), after.Load(), "the other AfterHandle ran")
			assert.Empty(t, handled, "handled again")
			eventually(t, waitLong, func() bool { return e.Stats().ConsumerHookPanics == 1 }, "the panic was not counted in Stats")
			assert.Contains(t, logs.String(), "boom "+where, "the panic was logged")
			assert.Contains(t, logs.String(), equeue.ErrHookPanic.Error())
		})
	}
}

// endRecorder is a TraceHooks.StartSend whose end reports each call's
// error on ended.
func endRecorder(ended chan<- error) equeue.Hooks {
	return equeue.Hooks{Trace: &equeue.TraceHooks{StartSend: func(ctx context.Context, _ []*equeue.Message) (context.Context, func([]equeue.SendResult, error)) {
		return ctx, func(res []equeue.SendResult, err error) {
			if err == nil {
				err = errors.New("ended without an error")
			}
			ended <- err
		}
	}}}
}

// TestProducer_HookPanicOnTheCallersGoroutineEndsTheTrace: a BeforeSend
// (or a Send's AfterSend) runs on the caller's goroutine, after StartSend
// began the send's span, and a panic there goes on to the caller. The
// span's end was never called, leaving the span open; it is now called
// once, with the panic as an error matching ErrHookPanic.
func TestProducer_HookPanicOnTheCallersGoroutineEndsTheTrace(t *testing.T) {
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
				h.BeforeSend = func(context.Context, *equeue.Message) { panic("boom") }
			} else {
				h.AfterSend = func(context.Context, *equeue.Message, equeue.SendResult, error) { panic("boom") }
			}
			p := newProducer(t, e, &equeue.ProducerOptions{Hooks: []equeue.Hooks{endRecorder(ended), h}})

			assert.PanicsWithValue(t, "boom", func() { sends[c.send](ctx, p) }, "the panic reaches the caller")
			select {
			case err := <-ended:
				assert.ErrorIs(t, err, equeue.ErrHookPanic)
				assert.ErrorContains(t, err, "boom")
			default:
				t.Fatal("the send's trace was not ended")
			}
			assert.Empty(t, ended, "ended more than once")
			require.NoError(t, p.Close())
		})
	}
}

// TestHooks_ChainedTraceEndsThatPanicAreAllReported: the ends of two
// trace hooks both panic. Each end ran, but only the last panic was
// recovered: a SendAsync's future and a consumer's log reported one and
// lost the other. Both are now reported (and counted in Stats).
func TestHooks_ChainedTraceEndsThatPanicAreAllReported(t *testing.T) {
	panicky := func(name string) equeue.Hooks {
		return equeue.Hooks{Trace: &equeue.TraceHooks{
			StartSend: func(ctx context.Context, _ []*equeue.Message) (context.Context, func([]equeue.SendResult, error)) {
				return ctx, func([]equeue.SendResult, error) { panic("boom send end " + name) }
			},
			StartHandle: func(ctx context.Context, _ *equeue.Message, _ equeue.Delivery) (context.Context, func(equeue.HandleOutcome)) {
				return ctx, func(equeue.HandleOutcome) { panic("boom handle end " + name) }
			},
		}}
	}
	hooks := []equeue.Hooks{panicky("a"), panicky("b")}
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))

	p := newProducer(t, e, &equeue.ProducerOptions{Hooks: hooks})
	var (
		res equeue.SendResult
		err error
	)
	require.NotPanics(t, func() {
		res, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(ctx)
	})
	require.ErrorIs(t, err, equeue.ErrHookPanic)
	assert.ErrorContains(t, err, "boom send end a")
	assert.ErrorContains(t, err, "boom send end b")
	assert.NotEmpty(t, res.ID, "the message was stored")
	assert.Equal(t, uint64(2), e.Stats().ConsumerHookPanics, "the future's panics were not counted")

	var logs syncBuffer
	handled := make(chan struct{}, 10)
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, Hooks: hooks, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Handler: func(context.Context, *equeue.Message) error {
			handled <- struct{}{}
			return nil
		}})
	select {
	case <-handled:
	case <-time.After(waitLong):
		t.Fatal("the message was not handled")
	}
	eventually(t, waitLong, func() bool { return e.Stats().ConsumerHookPanics == 4 }, "both of the consumer's panics were not counted")
	assert.Contains(t, logs.String(), "boom handle end a")
	assert.Contains(t, logs.String(), "boom handle end b")
}

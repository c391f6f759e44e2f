package equeue_test

import (
	"context"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// goexitOnce returns a function that calls runtime.Goexit, as t.FailNow
// does, the first time it is called with where.
func goexitOnce(where string) func(string) {
	var done atomic.Bool
	return func(w string) {
		if w == where && done.CompareAndSwap(false, true) {
			runtime.Goexit()
		}
	}
}

// TestProducer_SendAsyncHookGoexitCompletesTheFuture: a SendAsync's
// AfterSend and trace end run where the send completes, where their
// panics are recovered; recover cannot stop a runtime.Goexit, which ended
// that goroutine silently and left the future waiting for ever. The
// future now completes with an error matching ErrHookPanic that names the
// hook, its result still says where the message was stored, the trace's
// end still runs after an AfterSend's Goexit, and the Goexit is counted in
// Stats. The hooks run on a goroutine of the producer's, and the engine
// serves the next sends (TestProducer_SendAsyncHookGoexitLeavesTheEngineWriting).
func TestProducer_SendAsyncHookGoexitCompletesTheFuture(t *testing.T) {
	for _, c := range []struct{ over, where, name string }{
		{"engine", "AfterSend", "AfterSend"},
		{"engine", "end", "TraceHooks.StartSend end"},
		{"wrapper", "AfterSend", "AfterSend"},
		{"wrapper", "end", "TraceHooks.StartSend end"},
	} {
		t.Run(c.over+"/"+c.where, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			var b equeue.Broker = e
			if c.over == "wrapper" {
				b = &busyBroker{Engine: e}
			}
			exit := goexitOnce(c.where)
			ended := make(chan error, 10)
			p := newProducer(t, b, &equeue.ProducerOptions{Hooks: []equeue.Hooks{{
				AfterSend: func(context.Context, *equeue.Message, equeue.SendResult, error) { exit("AfterSend") },
				Trace: &equeue.TraceHooks{StartSend: func(ctx context.Context, _ []*equeue.Message) (context.Context, func([]equeue.SendResult, error)) {
					return ctx, func(_ []equeue.SendResult, err error) {
						ended <- err
						exit("end")
					}
				}},
			}}})
			wctx, cancel := context.WithTimeout(ctx, waitLong)
			defer cancel()
			res, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(wctx)
			require.NotErrorIs(t, err, context.DeadlineExceeded, "the future never completed")
			require.ErrorIs(t, err, equeue.ErrHookPanic)
			assert.ErrorContains(t, err, c.name+": runtime.Goexit called")
			assert.NotEmpty(t, res.ID, "the result says the message was stored")
			assert.Equal(t, int64(0), res.Offset)
			select {
			case err := <-ended: // after an AfterSend's Goexit, the trace still ends
				if c.where == "AfterSend" {
					assert.ErrorIs(t, err, equeue.ErrHookPanic)
				}
			default:
				t.Error("the send's trace was not ended")
			}
			assert.Empty(t, ended, "ended more than once")
			if c.over == "engine" {
				assert.Equal(t, uint64(1), e.Stats().ConsumerHookPanics, "the Goexit was counted")
			}
			next, err := newProducer(t, b, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("y")})
			require.NoError(t, err)
			assert.Equal(t, int64(1), next.Offset)
			require.NoError(t, p.Close())
		})
	}
}

// TestConsumer_HookGoexitIsReportedAndTheConsumerGoesOn: a consumer's
// hooks run on its goroutines, where recover cannot stop a runtime.Goexit
// (t.FailNow in a hook). It ended a handler goroutine silently, the
// message it handled stayed running, and Close waited for it until both
// of its ShutdownTimeout waits ran out. Now the Goexit is logged, naming
// the hook, and counted in Stats; the message is left unfinished, so Close
// returns at once, and the group's next consumer gets it again. A
// concurrent consumer goes on handling the next messages meanwhile; an
// orderly one leaves the queue to its next owner.
func TestConsumer_HookGoexitIsReportedAndTheConsumerGoesOn(t *testing.T) {
	names := map[string]string{"BeforeHandle": "BeforeHandle", "AfterHandle": "AfterHandle", "StartHandle": "TraceHooks.StartHandle", "end": "TraceHooks.StartHandle end"}
	for _, mode := range []string{"concurrent", "batch", "orderly"} {
		for _, where := range []string{"BeforeHandle", "AfterHandle", "StartHandle", "end"} {
			t.Run(mode+"/"+where, func(t *testing.T) {
				ctx := ctxT(t)
				e, _ := openEngine(t, "memory", nil)
				require.NoError(t, e.CreateTopic(ctx, "t", 1))
				p := newProducer(t, e, nil)
				_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
				require.NoError(t, err)

				exit := goexitOnce(where)
				hooks := []equeue.Hooks{{
					BeforeHandle: func(context.Context, *equeue.Message) { exit("BeforeHandle") },
					AfterHandle:  func(context.Context, *equeue.Message, error, time.Duration) { exit("AfterHandle") },
					Trace: &equeue.TraceHooks{StartHandle: func(ctx context.Context, _ *equeue.Message, _ equeue.Delivery) (context.Context, func(equeue.HandleOutcome)) {
						exit("StartHandle")
						return ctx, func(equeue.HandleOutcome) { exit("end") }
					}},
				}}
				var logs syncBuffer
				handled := make(chan string, 100)
				o := equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
					Hooks: hooks, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Orderly: mode == "orderly"}
				if mode == "batch" {
					o.BatchSize = 2
					o.BatchHandler = func(_ context.Context, ms []*equeue.Message) error {
						for _, m := range ms {
							handled <- string(m.Body)
						}
						return nil
					}
				} else {
					o.Handler = func(_ context.Context, m *equeue.Message) error {
						handled <- string(m.Body)
						return nil
					}
				}
				c := startConsumer(t, e, o)

				eventually(t, waitLong, func() bool { return e.Stats().ConsumerHookPanics == 1 }, "the Goexit was not counted")
				assert.Contains(t, logs.String(), names[where]+": runtime.Goexit called", "the Goexit was logged, naming the hook")
				if mode != "orderly" {
					_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("y")})
					require.NoError(t, err)
					waitBody(t, handled, "y")
				}

				closed := make(chan error, 1)
				go func() { closed <- c.Close() }()
				select {
				case err := <-closed:
					require.NoError(t, err)
				case <-time.After(waitLong):
					t.Fatal("Close waits for the handling that the Goexit ended")
				}

				// The message was left unfinished: the group's next consumer gets it.
				again := make(chan string, 100)
				startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
					Handler: func(_ context.Context, m *equeue.Message) error {
						again <- string(m.Body)
						return nil
					}})
				waitBody(t, again, "x")
			})
		}
	}
}

// waitBody waits for body on ch, skipping other bodies.
func waitBody(t *testing.T, ch <-chan string, body string) {
	t.Helper()
	timeout := time.After(waitLong)
	for {
		select {
		case b := <-ch:
			if b == body {
				return
			}
		case <-timeout:
			t.Fatalf("%q was not handled", body)
		}
	}
}

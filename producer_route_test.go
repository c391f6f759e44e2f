package equeue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// SendAsync through a broker without fast paths (here a wrapper of the
// engine) asks the selector once per message, as Send does: keyless
// messages go round robin over every queue. It asked twice, so with an
// even queue count every other queue got nothing.
func TestProducer_SendAsyncWithoutFastPathsRoundRobins(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := &busyBroker{Engine: e}
	require.False(t, equeue.OwnsFastPaths(b))
	p := newProducer(t, b, nil)
	counts := map[int]int{}
	for range 4 {
		res, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(ctx)
		require.NoError(t, err)
		counts[res.Queue]++
	}
	assert.Equal(t, map[int]int{0: 2, 1: 2}, counts, "messages per queue")
}

// A panic in a producer's hook during SendAsync reaches the caller, who
// may recover it (net/http recovers a handler's panic), and then leaves
// nothing pending: Close returns. It waited for that send forever, and so
// did the engine's Close. A selector's panic is the send's error
// (TestProducer_SelectorPanicIsTheSendsError), and leaves nothing either.
func TestProducer_SendAsyncPanicLeavesNothingForCloseToWaitFor(t *testing.T) {
	for _, where := range []string{"hook", "selector"} {
		t.Run(where, func(t *testing.T) {
			ctx := ctxT(t)
			// Not openEngine: its Close would wait for the lost send too,
			// and the test would hang instead of failing.
			e, err := equeue.Open("", &equeue.Options{InMemory: true})
			require.NoError(t, err)
			var producerClosed atomic.Bool
			t.Cleanup(func() {
				if producerClosed.Load() {
					require.NoError(t, e.Close())
				}
			})
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			boom := func() {
				panic("boom")
			}
			var opts equeue.ProducerOptions
			if where == "hook" {
				opts.Hooks = []equeue.Hooks{{BeforeSend: func(context.Context, *equeue.Message) { boom() }}}
			} else {
				opts.Selector = equeue.QueueSelectorFunc(func(*equeue.Message, []int) int { boom(); return 0 })
			}
			p, err := equeue.NewProducer(e, &opts)
			require.NoError(t, err)
			if where == "hook" {
				assert.PanicsWithValue(t, "boom", func() {
					p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
				})
			} else {
				_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(ctx)
				assert.ErrorIs(t, err, equeue.ErrSelectorPanic)
			}
			closed := make(chan error, 1)
			go func() { closed <- p.Close() }()
			select {
			case err := <-closed:
				require.NoError(t, err)
				producerClosed.Store(true)
			case <-time.After(5 * time.Second):
				t.Fatal("Close still waits for the send that panicked")
			}
			_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("y")})
			assert.ErrorIs(t, err, equeue.ErrClosed)
		})
	}
}

// TestProducer_NilSelectorFuncAndNilResultContext: a nil
// QueueSelectorFunc is refused when the producer is made, not by a panic
// at every send; a future's Result with a nil context waits for the send.
func TestProducer_NilSelectorFuncAndNilResultContext(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	var f equeue.QueueSelectorFunc
	_, err := equeue.NewProducer(e, &equeue.ProducerOptions{Selector: f})
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)

	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	//lint:ignore SA1012 a nil context is what this checks
	r, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(nil)
	require.NoError(t, err)
	require.Equal(t, int64(0), r.Offset)
}

// A producer's selector that panics fails the send with ErrSelectorPanic
// (its value in the message) and stores nothing, on every send call and
// whether the selector runs on the caller's goroutine or, for a SendAsync
// through a broker without fast paths, on one of the producer's own. The
// panic used to reach Send's caller and, from the producer's goroutine,
// crashed the program.
func TestProducer_SelectorPanicIsTheSendsError(t *testing.T) {
	for _, over := range []string{"engine", "wrapper"} {
		t.Run(over, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			var b equeue.Broker = e
			if over == "wrapper" {
				b = &busyBroker{Engine: e}
			}
			p := newProducer(t, b, &equeue.ProducerOptions{
				Selector: equeue.QueueSelectorFunc(func(*equeue.Message, []int) int { panic("boom") }),
			})
			m := func() *equeue.Message { return &equeue.Message{Topic: "t", Body: []byte("x")} }
			var errs []error
			assert.NotPanics(t, func() {
				_, err := p.SendAsync(ctx, m()).Result(ctx)
				errs = append(errs, err)
				_, err = p.Send(ctx, m())
				errs = append(errs, err)
				_, err = p.SendBatch(ctx, []*equeue.Message{m(), m()})
				errs = append(errs, err)
			})
			require.Len(t, errs, 3)
			for i, err := range errs {
				assert.ErrorIs(t, err, equeue.ErrSelectorPanic, "call %d", i)
				assert.ErrorContains(t, err, "boom", "call %d", i)
			}
			assert.Zero(t, queueStatsOf(t, e, "t", 0).MaxOffset, "nothing stored")
		})
	}
}

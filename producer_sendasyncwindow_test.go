package equeue_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// heldBroker embeds the engine and overrides Append, so it owns no fast
// path: SendAsync runs each send as Send, on a goroutine. Its Append
// waits until release is closed, then appends; it counts the Appends
// started and the most running at once.
type heldBroker struct {
	*equeue.Engine
	release chan struct{}
	started atomic.Int64
	running atomic.Int64
	most    atomic.Int64
}

func newHeldBroker(e *equeue.Engine) *heldBroker {
	return &heldBroker{Engine: e, release: make(chan struct{})}
}

func (b *heldBroker) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	b.started.Add(1)
	n := b.running.Add(1)
	defer b.running.Add(-1)
	for {
		m := b.most.Load()
		if n <= m || b.most.CompareAndSwap(m, n) {
			break
		}
	}
	<-b.release
	return b.Engine.Append(ctx, req)
}

// sendersWaitingForAWindowSlot counts the SendAsync calls parked while
// their producer's window is full (the goroutine path's, for a broker
// without an AppendAsync of its own).
func sendersWaitingForAWindowSlot() int {
	buf := make([]byte, 1<<24)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		parked := strings.Contains(header, "[select") || strings.Contains(header, "[chan receive")
		if parked && strings.Contains(g, "equeue.(*Producer).takeAsyncSlot(") && strings.Contains(g, "equeue.(*Producer).SendAsync(") {
			n++
		}
	}
	return n
}

// fillWindow sends n messages through p.SendAsync from a goroutine of its
// own (SendAsync blocks once the window is full) and returns a channel
// that gets their futures, in order, once every call returned.
func fillWindow(ctx context.Context, p *equeue.Producer, n int) <-chan []*equeue.SendFuture {
	fed := make(chan []*equeue.SendFuture, 1)
	go func() {
		fs := make([]*equeue.SendFuture, n)
		for i := range fs {
			fs[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
		}
		fed <- fs
	}()
	return fed
}

// checkStoredOnce checks that each future succeeded, that the message at
// its offset is its own, and that the queue holds those n and nothing
// else (a send that failed while it waited for a slot was not sent).
func checkStoredOnce(t *testing.T, ctx context.Context, e *equeue.Engine, futures []*equeue.SendFuture) {
	t.Helper()
	results := make([]equeue.SendResult, len(futures))
	for i, f := range futures {
		res, err := f.Result(ctx)
		require.NoError(t, err, "send %d", i)
		results[i] = res
	}
	bodies := map[int64]string{}
	for off := int64(0); ; {
		r, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off, Max: 1024})
		require.NoError(t, err)
		if len(r.Messages) == 0 {
			break
		}
		for _, m := range r.Messages {
			bodies[m.Offset] = string(m.Body)
		}
		off = r.NextOffset
	}
	require.Len(t, bodies, len(futures), "each send stored once, nothing else")
	for i, res := range results {
		assert.Equal(t, fmt.Sprint(i), bodies[res.Offset], "send %d's offset holds its message", i)
	}
}

// A burst of SendAsync calls on a broker without an AppendAsync of its own
// (a wrapper of the engine that overrides Append) starts at most the
// producer's window of sends (1,024 by default), each on a goroutine; the
// next calls block until a send completes or their context ends. One whose
// context ends while it waits fails with the context's error and is not
// sent; the others complete once the broker answers. Before, each call
// started a goroutine, without a bound.
func TestProducer_SendAsyncWithoutAFastPathIsBoundedByTheWindow(t *testing.T) {
	const window = 1024 // the default
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := newHeldBroker(e)
	p := newProducer(t, b, nil)
	released := false
	defer func() {
		if !released {
			close(b.release)
		}
	}()

	const n = window + 50
	fed := fillWindow(ctx, p, n)
	eventually(t, time.Minute, func() bool {
		return b.started.Load() > window || (b.started.Load() == window && sendersWaitingForAWindowSlot() == 1)
	}, "the window fills and the next SendAsync waits (%v started)", func() any { return b.started.Load() })
	require.Equal(t, int64(window), b.started.Load(), "Appends started while the first ones are held")

	cctx, cancel := context.WithCancel(ctx)
	returned := make(chan *equeue.SendFuture, 1)
	go func() { returned <- p.SendAsync(cctx, &equeue.Message{Topic: "t", Body: []byte("cancelled")}) }()
	eventually(t, time.Minute, func() bool { return sendersWaitingForAWindowSlot() == 2 }, "a second SendAsync waits")
	select {
	case <-returned:
		t.Fatal("SendAsync returned while the window was full and its context live")
	default:
	}
	cancel()
	f := <-returned
	_, err := f.Result(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, equeue.ErrIndeterminate, "never sent")
	require.Equal(t, int64(window), b.started.Load(), "the cancelled send started no Append")

	close(b.release)
	released = true
	futures := <-fed
	checkStoredOnce(t, ctx, e, futures)
	assert.Equal(t, int64(n), b.started.Load(), "one Append per send")
	assert.LessOrEqual(t, b.most.Load(), int64(window), "Appends running at once")
}

// ProducerOptions.AsyncWindow sets the window; Close fails the SendAsync
// calls waiting for a slot with ErrClosed, not sent, and returns once the
// sends in flight complete.
func TestProducer_AsyncWindowOptionAndCloseWhileWaiting(t *testing.T) {
	const window = 4
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := newHeldBroker(e)
	p := newProducer(t, b, &equeue.ProducerOptions{AsyncWindow: window})
	released := false
	defer func() {
		if !released {
			close(b.release)
		}
	}()

	fed := fillWindow(ctx, p, window)
	futures := <-fed // the window has room for every one: none waits
	eventually(t, time.Minute, func() bool { return b.started.Load() == window }, "the sends start")

	waiting := make(chan *equeue.SendFuture, 1)
	go func() { waiting <- p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("waiting")}) }()
	eventually(t, time.Minute, func() bool { return sendersWaitingForAWindowSlot() == 1 }, "a SendAsync past the window waits")

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	_, err := (<-waiting).Result(ctx)
	require.ErrorIs(t, err, equeue.ErrClosed, "the waiting send fails once Close begins")
	select {
	case <-closed:
		t.Fatal("Close returned while sends were in flight")
	default:
	}
	_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("late")}).Result(ctx)
	require.ErrorIs(t, err, equeue.ErrClosed)

	close(b.release)
	released = true
	require.NoError(t, <-closed)
	for _, f := range futures {
		select {
		case <-f.Done():
		default:
			t.Fatal("Close returned before a send in flight completed")
		}
	}
	checkStoredOnce(t, ctx, e, futures)
	assert.Equal(t, int64(window), b.started.Load(), "no Append for the refused sends")
	assert.Equal(t, int64(window), b.most.Load())
}

// A negative AsyncWindow is refused.
func TestProducer_NegativeAsyncWindowIsRefused(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	_, err := equeue.NewProducer(e, &equeue.ProducerOptions{AsyncWindow: -1})
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)
}

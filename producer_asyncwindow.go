package equeue

import (
	"context"
	"errors"
	"time"
)

// DefaultAsyncWindow is the number of SendAsync calls a producer runs at
// once on a broker without an AppendAsync of its own when
// ProducerOptions.AsyncWindow is zero: the size of the in-process engine's
// writer queue, which such a broker (a wrapper of the Engine that
// overrides Append) most often sits on. A wider window would park the
// extra goroutines in that queue instead of in SendAsync, and 1,024
// goroutines waiting on a slow broker hold a few MiB of stacks.
const DefaultAsyncWindow = 1024

// On a broker that owns an AppendAsync (OwnsFastPaths), SendAsync is
// bounded by the broker's own queue: the engine's writer queue, a remote
// client's append window. On any other broker each SendAsync runs as Send
// on a goroutine of its own, and the producer's window bounds those
// goroutines: a send takes a slot before its goroutine starts and frees it
// when the goroutine ends; while every slot is taken SendAsync waits, as
// it waits for room in the broker's queue on the other paths.

// takeAsyncSlot takes a slot of p's window for a SendAsync that runs on a
// goroutine of its own, waiting while the window is full. It fails with
// ctx's error when ctx ends first and with ErrClosed when Close begins
// first: the send is then not sent. Called from a goroutine running the
// broker's callbacks (inBrokerCallback), it fails with ErrWindowFull at
// once instead of waiting.
func (p *Producer) takeAsyncSlot(ctx context.Context) error {
	select {
	case p.window <- struct{}{}:
		return nil
	default:
	}
	if p.inBrokerCallback() {
		return ErrWindowFull
	}
	select {
	case p.window <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.closing:
		return ErrClosed
	}
}

// inBrokerCallback reports whether the current goroutine runs the
// broker's callbacks (CallbackRunner). A SendAsync there must not wait
// for room, in the producer's window or in its queue of stale-route
// retries: the sends holding that room may wait for answers that this
// goroutine reads.
func (p *Producer) inBrokerCallback() bool {
	cr, ok := p.b.(CallbackRunner)
	return ok && cr.RunsCallback()
}

// freeAsyncSlot frees a slot taken by takeAsyncSlot.
func (p *Producer) freeAsyncSlot() { <-p.window }

// sendInWindow sends m for a SendAsync holding a slot of p's window, on a
// goroutine of its own, to queue q, which SendAsync picked (or the
// retryable error perr it met picking one). A stale route is retried once
// on a fresh one, as Send retries it, the selector asked again on this
// goroutine: a Close it calls detaches the send (closeFromPicker), which
// then ends with ErrClosed, not sent. The slot is freed once the send
// returns, before its AfterSend hooks run, which run as on the other
// paths: on the producer's completions goroutine (completeAsync, which
// also ends the send's count in p.async). A hook may thus call SendAsync
// while the window is full: it waits for a send to end, not for its own
// hooks. A broker whose Route or Append never returns to it
// (runtime.Goexit) frees the slot too, and the future fails
// (brokerCallEnded).
func (p *Producer) sendInWindow(ctx context.Context, m *Message, q int, perr error, finish func(SendResult, error)) {
	var (
		res       SendResult
		err       = perr
		pk        *picker // set while the selector is asked again
		appending bool
		detached  bool
		handed    bool
	)
	defer func() {
		if handed {
			return
		}
		// The broker's Route or Append, or the selector, called
		// runtime.Goexit.
		if pk != nil {
			detached = p.pickers.leave(pk)
		}
		p.freeAsyncSlot()
		p.finishAsync(finish, SendResult{}, p.brokerCallEnded(m, appending), detached)
	}()
	if err == nil {
		appending = true
		err = p.appendOne(ctx, m, q, time.Now(), &res)
		appending = false
	}
	if err != nil && routeRetryable(err) {
		pk = p.pickers.enter(&picker{}) // a stale route is rare: its goroutine ID's cost is paid here alone
		now := time.Now()
		q, err = p.pick(ctx, m, true, now)
		detached = p.pickers.leave(pk)
		pk = nil
		if detached {
			err = ErrClosed
		} else if err == nil {
			appending = true
			err = p.appendOne(ctx, m, q, now, &res)
			appending = false
		}
	}
	handed = true
	p.freeAsyncSlot()
	p.finishAsync(finish, res, err, detached)
}

// ErrWindowFull is what SendAsync reports at once, the message not sent,
// when the window it would wait for a slot of is full and it is called
// from a goroutine running the broker's callbacks (see CallbackRunner):
// the answers that would free a slot may be that goroutine's to read. A
// remote client's AppendAsync reports an error matching it in that case.
var ErrWindowFull = errors.New("equeue: window full in a broker's callback")

// CallbackRunner is implemented by a broker whose AppendAsync callbacks
// may run on a goroutine that the broker's calls wait for (a remote
// client's, which reads the answers of its append stream on it):
// RunsCallback reports whether the current goroutine is one of those. A
// producer over such a broker, or over a wrapper of it that has the
// method (one that embeds it), does not wait for a slot of its full
// AsyncWindow on such a goroutine: SendAsync reports ErrWindowFull at once.
type CallbackRunner interface {
	// RunsCallback reports whether the current goroutine runs the
	// broker's AppendAsync callbacks.
	RunsCallback() bool
}

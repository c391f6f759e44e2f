package equeue

import "context"

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
// first: the send is then not sent.
func (p *Producer) takeAsyncSlot(ctx context.Context) error {
	select {
	case p.window <- struct{}{}:
		return nil
	default:
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

// freeAsyncSlot frees a slot taken by takeAsyncSlot.
func (p *Producer) freeAsyncSlot() { <-p.window }

// sendInWindow sends m for a SendAsync holding a slot of p's window, on a
// goroutine of its own. The slot is freed once the send returns, before
// its AfterSend hooks run, which run as on the other paths: on the
// producer's completions goroutine (completeAsync, which also ends the
// send's count in p.async). A hook may thus call SendAsync while the
// window is full: it waits for a send to end, not for its own hooks. A
// broker whose Append never returns to it (runtime.Goexit) frees the slot
// too, and the future fails (brokerCallEnded).
func (p *Producer) sendInWindow(ctx context.Context, m *Message, finish func(SendResult, error)) {
	handed := false
	defer func() {
		if !handed { // the broker's Append called runtime.Goexit
			p.freeAsyncSlot()
			p.completeAsync(finish, SendResult{}, p.brokerCallEnded(m))
		}
	}()
	var res SendResult
	err := p.send(ctx, m, &res)
	handed = true
	p.freeAsyncSlot()
	p.completeAsync(finish, res, err)
}

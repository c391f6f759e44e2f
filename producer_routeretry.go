package equeue

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A SendAsync on a broker with an AppendAsync of its own (the Engine, a
// remote client) picks its queue on the producer's cached route; when the
// topic's queues changed under it (a queue closed to producers, fewer
// queues) the broker answers ErrQueueNotWritable or ErrQueueNotFound,
// and the send is retried once on a fresh route, as Send retries it. The
// answer comes on the broker's goroutine (or at once, on the caller's),
// which must not block, and the retry looks the route up and appends as
// Send does, so it runs on a goroutine of the producer's. A change of a
// busy topic's queues fails a burst of sends at once: they wait in one
// queue, drained by at most the producer's AsyncWindow of goroutines, so
// the burst makes no goroutine per send. The queue is bounded too: the
// broker's queue has room again once it answered, so nothing else would
// stop senders from filling it for as long as the retries are slow. While
// AsyncWindow sends wait in it, SendAsync waits for room before it
// appends (waitRetryRoom), as it waits for room in the broker's queue:
// at most AsyncWindow, plus the appends then in the broker's queue and
// the SendAsync calls passing the check at that moment, wait.

// routeRetry is a SendAsync of m whose first append met a stale route;
// finish completes it.
type routeRetry struct {
	ctx    context.Context
	m      *Message
	finish func(SendResult, error)
}

// routeRetries queues a producer's sends to retry on a fresh route for
// the goroutines that retry them (runRouteRetries): at most limit of
// them, each started when a send comes while fewer run and gone once the
// queue is empty.
type routeRetries struct {
	mu      sync.Mutex
	queue   []routeRetry
	head    int // queue[head:] are waiting
	running int // runRouteRetries goroutines serving the queue
	limit   int
	// waiting is len(queue)-head, read without mu by waitRetryRoom.
	waiting atomic.Int64
	// room, when not nil, is closed once fewer than limit wait: SendAsync
	// calls waiting for room wait for it.
	room chan struct{}
}

// waitRetryRoom waits, for a SendAsync about to append, while limit
// sends wait in p's queue of stale-route retries. It fails with ctx's
// error when ctx ends first and with ErrClosed when Close begins first:
// the send is then not sent. Called on a goroutine running the broker's
// callbacks (CallbackRunner), it does not wait: the retries may wait for
// answers that goroutine reads, so it fails with ErrWindowFull at once
// (inBrokerCallback).
func (p *Producer) waitRetryRoom(ctx context.Context) error {
	r := &p.retries
	if r.waiting.Load() < int64(r.limit) {
		return nil
	}
	if p.inBrokerCallback() {
		r.mu.Lock()
		full := len(r.queue)-r.head >= r.limit
		r.mu.Unlock()
		if full {
			return ErrWindowFull
		}
		return nil
	}
	for {
		r.mu.Lock()
		if len(r.queue)-r.head < r.limit {
			r.mu.Unlock()
			return nil
		}
		if r.room == nil {
			r.room = make(chan struct{})
		}
		room := r.room
		r.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.closing:
			return ErrClosed
		}
	}
}

// retryStale queues a SendAsync of m that met a stale route for a retry
// on a fresh route, completed through finish, and starts a goroutine to
// retry it if fewer than the limit run. It never blocks, so a broker's
// callback may call it.
func (p *Producer) retryStale(ctx context.Context, m *Message, finish func(SendResult, error)) {
	r := &p.retries
	r.mu.Lock()
	r.queue = append(r.queue, routeRetry{ctx: ctx, m: m, finish: finish})
	r.waiting.Add(1)
	start := r.running < r.limit
	if start {
		r.running++
	}
	r.mu.Unlock()
	if start {
		go p.runRouteRetries()
	}
}

// runRouteRetries retries the queued sends until the queue is empty. A
// broker whose Route or Append, or a selector, calls runtime.Goexit ends
// this goroutine: that send's future fails (brokerCallEnded), and a new
// goroutine goes on with the rest of the queue. A selector that calls
// Close detaches this goroutine (closeFromPicker), which hands the queue
// to a new one: the send it was picking a queue for ends with ErrClosed,
// not sent, and the goroutine with it.
func (p *Producer) runRouteRetries() {
	r := &p.retries
	pk := &picker{retry: true}
	var (
		cur       *routeRetry // the retry whose calls have not returned
		picking   bool
		appending bool
		detached  bool
	)
	defer func() {
		if cur == nil {
			return
		}
		// Not returned: runtime.Goexit, or a panic going on.
		if picking {
			detached = p.pickers.leave(pk)
		}
		p.finishAsync(cur.finish, SendResult{}, p.brokerCallEnded(cur.m, appending), detached)
		if !detached { // a detached goroutine's place was taken already
			go p.runRouteRetries()
		}
	}()
	for {
		r.mu.Lock()
		if r.head == len(r.queue) {
			r.queue, r.head = r.queue[:0], 0
			r.running--
			r.mu.Unlock()
			return
		}
		w := r.queue[r.head]
		r.queue[r.head] = routeRetry{}
		r.head++
		if r.waiting.Add(-1) < int64(r.limit) && r.room != nil {
			close(r.room)
			r.room = nil
		}
		r.mu.Unlock()
		cur = &w
		var res SendResult
		now := time.Now()
		picking = true
		p.pickers.enter(pk)
		q, err := p.pick(w.ctx, w.m, true, now)
		detached = p.pickers.leave(pk)
		picking = false
		if detached {
			err = ErrClosed
		} else if err == nil {
			appending = true
			err = p.appendOne(w.ctx, w.m, q, now, &res)
			appending = false
		}
		cur = nil
		p.finishAsync(w.finish, res, err, detached)
		if detached {
			return
		}
	}
}

// handOffRetries starts a goroutine in the place of a runRouteRetries one
// that a Close from its selector detached, if sends wait for it.
func (p *Producer) handOffRetries() {
	r := &p.retries
	r.mu.Lock()
	r.running--
	start := r.head < len(r.queue)
	if start {
		r.running++
	}
	r.mu.Unlock()
	if start {
		go p.runRouteRetries()
	}
}

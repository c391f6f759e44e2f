package equeue

import (
	"context"
	"sync"
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
// the burst makes no goroutine per send.

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
}

// retryStale queues a SendAsync of m that met a stale route for a retry
// on a fresh route, completed through finish, and starts a goroutine to
// retry it if fewer than the limit run. It never blocks, so a broker's
// callback may call it.
func (p *Producer) retryStale(ctx context.Context, m *Message, finish func(SendResult, error)) {
	r := &p.retries
	r.mu.Lock()
	r.queue = append(r.queue, routeRetry{ctx: ctx, m: m, finish: finish})
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
// broker whose Route or Append calls runtime.Goexit ends this goroutine:
// that send's future fails (brokerCallEnded), and a new goroutine goes on
// with the rest of the queue.
func (p *Producer) runRouteRetries() {
	r := &p.retries
	var cur *routeRetry // the retry whose broker calls have not returned
	defer func() {
		if cur != nil { // not returned: runtime.Goexit, or a panic going on
			p.completeAsync(cur.finish, SendResult{}, p.brokerCallEnded(cur.m))
			go p.runRouteRetries() // in this goroutine's place
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
		r.mu.Unlock()
		cur = &w
		var res SendResult
		err := p.sendOnce(w.ctx, w.m, true, &res)
		cur = nil
		p.completeAsync(w.finish, res, err)
	}
}

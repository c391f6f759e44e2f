package kafka

import (
	"context"
	"fmt"
	"sync"
)

// defaultQueuedBudget is Options.MaxQueuedRequestBytes when it is zero.
const defaultQueuedBudget = 256 << 20

// queuedBudget bounds the memory request frames take, over every
// connection, as Kafka's queued.max.request.bytes does: a connection
// reserves a frame's size before it allocates and reads the frame's body,
// and gives it back once the request was answered (or failed). Each
// connection may send frames of up to maxRequestSize, so without it k
// connections could make the listener hold k times that at once; with it,
// connections whose frames do not fit wait, unread, for those being
// handled.
type queuedBudget struct {
	mu      sync.Mutex
	free    int64         // bytes of the budget not reserved
	budget  int64         // the whole budget
	changed chan struct{} // closed (and replaced) when free grows

	// waiting, when set (tests), is called when a frame must wait for
	// room.
	waiting func()
}

func newQueuedBudget(budget int64) *queuedBudget {
	return &queuedBudget{free: budget, budget: budget, changed: make(chan struct{})}
}

// reserve takes n bytes of the budget, waiting until ctx is done for
// them to be free (ctx's error then). A frame larger than the whole
// budget waits for all of it, so it is read alone. Reserved bytes are
// given back with unreserve.
func (q *queuedBudget) reserve(ctx context.Context, n int64) error {
	n = min(n, q.budget)
	for waited := false; ; waited = true {
		q.mu.Lock()
		if n <= q.free {
			q.free -= n
			q.mu.Unlock()
			return nil
		}
		changed := q.changed
		q.mu.Unlock()
		if !waited && q.waiting != nil {
			q.waiting()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("kafka: waiting for room to read a request: %w", context.Cause(ctx))
		}
	}
}

func (q *queuedBudget) unreserve(n int64) {
	n = min(n, q.budget)
	q.mu.Lock()
	q.free += n
	close(q.changed)
	q.changed = make(chan struct{})
	q.mu.Unlock()
}

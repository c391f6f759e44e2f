package kafka

import (
	"context"
	"fmt"
	"sync"
)

// byteBudget is a number of bytes shared by every connection of the
// listener: a user reserves what it is about to hold, waiting for room
// when the budget is taken, and gives it back with unreserve. It bounds
// request frames read and not yet answered (queued.go) and inflated
// records not yet stored (inflate.go).
type byteBudget struct {
	what string // what waits, for errors: "for ..."

	mu      sync.Mutex
	free    int64         // bytes of the budget not reserved
	budget  int64         // the whole budget
	changed chan struct{} // closed (and replaced) when free grows

	// waiting, when set (tests), is called when a reservation must wait
	// for room.
	waiting func()
}

func newByteBudget(budget int64, what string) *byteBudget {
	return &byteBudget{what: what, free: budget, budget: budget, changed: make(chan struct{})}
}

// reserve takes n bytes of the budget, waiting until ctx is done for
// them to be free (ctx's error then). More than the whole budget waits
// for all of it, so it is held alone. Reserved bytes are given back with
// unreserve.
func (b *byteBudget) reserve(ctx context.Context, n int64) error {
	n = min(n, b.budget)
	for waited := false; ; waited = true {
		b.mu.Lock()
		if n <= b.free {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		changed := b.changed
		b.mu.Unlock()
		if !waited && b.waiting != nil {
			b.waiting()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("kafka: waiting for room %s: %w", b.what, context.Cause(ctx))
		}
	}
}

// unreserve gives back n bytes reserve took, waking those waiting.
func (b *byteBudget) unreserve(n int64) {
	n = min(n, b.budget)
	b.mu.Lock()
	b.free += n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

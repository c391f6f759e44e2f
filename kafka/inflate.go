package kafka

import (
	"context"
	"fmt"
	"time"
)

// defaultMaxInflating is Options.MaxInflating when it is zero: with
// maxDecompressed, at most 200 MiB inflating at once.
const defaultMaxInflating = 2

// defaultInflatedBudget is Options.MaxInflatedBytes when it is zero.
const defaultInflatedBudget = 256 << 20

// inflateGate bounds the memory compressed batches take, over every
// connection and request: each may inflate to maxDecompressed, and a small
// request with many compressed partitions (each a partition's goroutine,
// see produce) could otherwise make the listener hold that many times
// maxDecompressed at once. It bounds it in two steps:
//
//   - a turn (acquire, release) to decompress and decode a batch, of which
//     at most MaxInflating run at once: they hold at most that many times
//     maxDecompressed while the size is not yet known;
//   - then the batch reserves its inflated size from a byte budget
//     (MaxInflatedBytes) before it gives its turn back, and holds it until
//     it is stored, since the stored messages are made of the inflated
//     records.
//
// Common batches of a few KiB so share the budget by the thousands and are
// stored together in the engine's group commits; only batches that
// inflate to tens of MiB wait for one another.
type inflateGate struct {
	slots chan struct{} // one a batch holding its turn
	// bytes is the budget of inflated bytes batches reserve (reserve,
	// unreserve) once decoded.
	bytes *byteBudget

	// waiting and entered, when set (tests), are called when a batch
	// must wait for its turn and when it has it (waited: after waiting).
	waiting func()
	entered func(waited bool)
}

func newInflateGate(n int, budget int64) *inflateGate {
	return &inflateGate{slots: make(chan struct{}, n), bytes: newByteBudget(budget, "for the inflated batch")}
}

// acquire waits for a turn until ctx is done; it returns ctx's error
// then. A turn acquired is given back with release.
func (g *inflateGate) acquire(ctx context.Context) error {
	waited := false
	select {
	case g.slots <- struct{}{}:
	default:
		waited = true
		if g.waiting != nil {
			g.waiting()
		}
		select {
		case g.slots <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("kafka: waiting to decompress the batch: %w", context.Cause(ctx))
		}
	}
	if g.entered != nil {
		g.entered(waited)
	}
	return nil
}

func (g *inflateGate) release() { <-g.slots }

// reserve takes n bytes of the inflated budget, waiting until ctx is
// done for them (ctx's error then). A batch larger than the whole budget
// waits for all of it. Reserved bytes are given back with unreserve.
func (g *inflateGate) reserve(ctx context.Context, n int64) error {
	return g.bytes.reserve(ctx, n)
}

// unreserve gives back n bytes reserve took.
func (g *inflateGate) unreserve(n int64) { g.bytes.unreserve(n) }

// defaultProduceWait bounds a compressed batch's wait for the inflate
// gate when its request gives no timeout (TimeoutMillis <= 0, as some
// acks=0 clients send): past it the partition is answered
// REQUEST_TIMED_OUT rather than held until the connection closes. 30 s
// is the Java client's default request timeout. Tests set another.
var defaultProduceWait = 30 * time.Second

package kafka

import (
	"context"
	"fmt"
)

// defaultMaxInflating is Options.MaxInflating when it is zero: with
// maxDecompressed, at most 200 MiB of records inflated at once.
const defaultMaxInflating = 2

// inflateGate bounds the compressed batches the listener holds
// decompressed at once, over every connection and request: each may
// inflate to maxDecompressed, so without a bound a small request with
// many compressed partitions (each a partition's goroutine, see produce)
// could make the listener allocate that many times maxDecompressed at
// once. A batch holds its turn from decompressing until it is stored,
// since the stored messages are made from the inflated records.
type inflateGate struct {
	slots chan struct{} // one a batch holding its turn
	// waiting and entered, when set (tests), are called when a batch
	// must wait for its turn and when it has it (waited: after waiting).
	waiting func()
	entered func(waited bool)
}

func newInflateGate(n int) inflateGate {
	return inflateGate{slots: make(chan struct{}, n)}
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

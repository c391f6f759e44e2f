package remote

import (
	"context"
	"fmt"
	"sync"
)

// DefaultMaxLongPollBytes is the default of ServerOptions.MaxLongPollBytes:
// the requests of held long-polls keep at most 64 MiB together, 32 MiB of
// it for one connection.
const DefaultMaxLongPollBytes = 64 << 20

// heldBytes bounds the bytes of the requests that held long-polls keep
// for as long as they wait: limit from every connection together, perConn
// from one (connKey; calls on other transports count against limit alone).
type heldBytes struct {
	limit   int64
	perConn int64

	mu    sync.Mutex
	total int64
	held  map[string]int64 // by connection; no zero entries
}

// newHeldBytes returns the bound of limit bytes (raised to
// maxMessageBytes, so that any request the server accepts may be held),
// half of it, and at least maxMessageBytes, for one connection.
func newHeldBytes(limit int64, maxMessageBytes int) *heldBytes {
	limit = max(limit, int64(maxMessageBytes))
	return &heldBytes{limit: limit, perConn: max(halfUp(limit), int64(maxMessageBytes)), held: make(map[string]int64)}
}

// take counts n more bytes of ctx's connection and returns the key to give
// them back under, or an ErrBusy error, counting nothing, when they would
// pass the connection's share or the whole bound.
func (h *heldBytes) take(ctx context.Context, n int64) (string, error) {
	key := connKey(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	if key != "" && h.held[key]+n > h.perConn {
		return "", fmt.Errorf("%w: this connection's long-polls hold %d bytes of requests, and %d more would pass its share, %d (ServerOptions.MaxLongPollBytes)",
			ErrBusy, h.held[key], n, h.perConn)
	}
	if h.total+n > h.limit {
		return "", fmt.Errorf("%w: long-polls hold %d bytes of requests, and %d more would pass %d (ServerOptions.MaxLongPollBytes)",
			ErrBusy, h.total, n, h.limit)
	}
	h.total += n
	if key != "" {
		h.held[key] += n
	}
	return key, nil
}

// give gives back n bytes that take counted under key.
func (h *heldBytes) give(key string, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total -= n
	if key == "" {
		return
	}
	if h.held[key] -= n; h.held[key] <= 0 {
		delete(h.held, key)
	}
}

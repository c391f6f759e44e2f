package remote

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc/peer"
)

// connShare bounds how much of a server-wide bound (MaxInFlight for unary
// calls, MaxLongPolls, MaxAppendStreams) one client connection holds, so
// that a connection that takes places without end (a client leaking pulls
// or calls, or a hostile one) leaves the rest to the others instead of
// getting them refused as busy.
// A nil *connShare bounds nothing.
type connShare struct {
	limit int64
	what  string // "calls", "long-polls", "append streams"
	field string // the ServerOptions field that sets limit

	mu   sync.Mutex
	held map[string]int64 // by connection (connKey); no zero entries
}

// newConnShare returns the share of a server-wide bound of total that one
// connection may hold: perConn, or by default half of total (rounded up)
// and at least least. It is nil, bounding nothing, when that is total or
// more.
func newConnShare(total int64, perConn int, least int64, what, field string) *connShare {
	limit := int64(perConn)
	if limit == 0 {
		limit = max(halfUp(total), least)
	}
	if limit >= total {
		return nil
	}
	return &connShare{limit: limit, what: what, field: field, held: make(map[string]int64)}
}

// connKey names the connection a call came on: its client's TCP address,
// which no two open connections share. It is "" for other transports (a
// Unix socket's clients have no address of their own), which are not
// bounded apart.
func connKey(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil || p.Addr.Network() != "tcp" {
		return ""
	}
	return p.Addr.String()
}

// take counts one more call of ctx's connection and returns the key to
// give back, or an ErrBusy error, counting nothing, when the connection
// holds its limit already.
func (c *connShare) take(ctx context.Context) (string, error) {
	if c == nil {
		return "", nil
	}
	key := connKey(ctx)
	if key == "" {
		return "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[key] >= c.limit {
		return "", fmt.Errorf("%w: this connection holds %d %s, the most one may (ServerOptions.%s)", ErrBusy, c.limit, c.what, c.field)
	}
	c.held[key]++
	return key, nil
}

// give gives back a place that take counted under key.
func (c *connShare) give(key string) {
	if c == nil || key == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[key]--; c.held[key] <= 0 {
		delete(c.held, key)
	}
}

// extraConnStreams is the room one connection's HTTP/2 stream bound
// (connStreams) leaves beyond its shares: health checks, reflection, and
// calls on their way to being refused as busy.
const extraConnStreams = 64

// halfUp is n/2 rounded up, for n >= 0: the default share of a total.
// (n+1)/2 would overflow for a total as large as an int64 holds, which
// stands for "no bound", and give a negative share.
func halfUp(n int64) int64 { return n/2 + n%2 }

// bound returns how many places of a server-wide bound of total one
// connection may hold: its share, or total when c bounds nothing.
func (c *connShare) bound(total int64) int64 {
	if c == nil {
		return total
	}
	return c.limit
}

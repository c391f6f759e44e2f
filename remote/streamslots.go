package remote

import (
	"context"
	"sync"
	"sync/atomic"
)

// streamSlots bounds how many slots of MaxInFlight the stream appends of
// one client connection hold at once (MaxStreamAppendsPerConn). A client's
// stream may have up to MaxInFlight appends unanswered, and each holds a
// slot while the store writes it: with a slow store one producer would
// hold every slot, and every other client's calls would be refused as busy
// meanwhile. An append past its connection's share is not refused: it
// waits, and its stream reads no more until it runs, so the rest of the
// window waits in the stream. A nil *streamSlots bounds nothing.
type streamSlots struct {
	limit   int
	waiting atomic.Int64 // appends waiting for their connection's share

	mu sync.Mutex
	by map[string]*connSlots // by connection (connKey)
}

// connSlots are the slots one connection's stream appends hold: a token in
// held for each.
type connSlots struct {
	key     string
	held    chan struct{}
	streams int // open on the connection; guarded by streamSlots.mu
}

// newStreamSlots returns the share of maxInFlight that one connection's
// stream appends may hold: perConn, or by default half of maxInFlight
// (rounded up). It is nil, bounding nothing, when that is maxInFlight or
// more.
func newStreamSlots(maxInFlight int64, perConn int) *streamSlots {
	limit := int64(perConn)
	if limit == 0 {
		limit = halfUp(maxInFlight)
	}
	if limit >= maxInFlight {
		return nil
	}
	return &streamSlots{limit: int(limit), by: make(map[string]*connSlots)}
}

// join returns the slots of the connection of the AppendStream call ctx,
// counting the call until leave; nil (nothing bounded apart) for a nil
// s or a call on another transport than TCP, as connKey says.
func (s *streamSlots) join(ctx context.Context) *connSlots {
	if s == nil {
		return nil
	}
	key := connKey(ctx)
	if key == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.by[key]
	if c == nil {
		c = &connSlots{key: key, held: make(chan struct{}, s.limit)}
		s.by[key] = c
	}
	c.streams++
	return c
}

// leave ends the count of a call that join returned c for.
func (s *streamSlots) leave(c *connSlots) {
	if c == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.streams--
	s.forget(c)
}

// take takes one of c's slots, waiting while the connection holds its
// share, until ctx ends.
func (s *streamSlots) take(ctx context.Context, c *connSlots) error {
	if c == nil {
		return nil
	}
	select {
	case c.held <- struct{}{}:
		return nil
	default:
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case c.held <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// give gives back a slot that take took.
func (s *streamSlots) give(c *connSlots) {
	if c == nil {
		return
	}
	<-c.held
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(c)
}

// forget drops c once no call of its connection is open and it holds no
// slot; s.mu is held.
func (s *streamSlots) forget(c *connSlots) {
	if c.streams == 0 && len(c.held) == 0 && s.by[c.key] == c {
		delete(s.by, c.key)
	}
}

// waitingAppends is how many stream appends wait for their connection's
// share.
func (s *streamSlots) waitingAppends() int64 {
	if s == nil {
		return 0
	}
	return s.waiting.Load()
}

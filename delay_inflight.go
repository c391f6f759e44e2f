package equeue

import (
	"bytes"
	"cmp"
	"errors"
	"slices"
)

// Moves in flight. A move's one store write appends the message to its
// queue and deletes its index key, but pulls see the message only once
// the write is synced and published, while Engine.Delayed reads the index
// keys straight from the store. Between the two the message would be in
// neither: not pending, not visible. So the scheduler registers each move
// before it queues it and keeps it until its message is visible (or its
// outcome is unknown, which only a reopen settles), and Delayed counts the
// registered moves instead of their index keys.
//
// A move refused without storing anything (a failed write, the engine
// stopped) leaves its key in place: it is unregistered, and a listing that
// skipped the key as in flight, its scan now past it, counts the move
// instead (delayListing.back).

// inflightMove is a move registered as in flight.
type inflightMove struct {
	entry DelayedEntry
	topic uint32 // the target topic's ID
	seq   int64  // its delay-log slot
	// unknown says its write failed with ErrIndeterminate: it stays
	// registered until a reopen, its message in its queue or pending.
	unknown bool
}

// register records the move of d as in flight. The caller then queues it.
func (s *scheduler) register(d dueEntry) {
	at, _, _ := parseDelayKey(d.key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight == nil {
		s.inflight = map[int64]inflightMove{}
	}
	for l := range s.listings {
		if l.cursor == nil || bytes.Compare(d.key, l.cursor) > 0 {
			continue
		}
		if _, ok := l.skipped[d.seq]; ok {
			delete(l.back, d.seq) // in flight again: counted as such
		} else {
			l.late[d.seq] = struct{}{}
		}
	}
	s.inflight[d.seq] = inflightMove{entry: DelayedEntry{DeliverAt: at, QueueRef: QueueRef{Queue: int(d.queue)}}, topic: d.topic, seq: d.seq}
}

// settle ends the registration of the move of slot seq whose command
// ended with err: a stored move, now visible, and a move refused with its
// key left in place are unregistered; one of unknown outcome stays
// registered (only a reopen tells where its message is), marked unknown.
// A refused move whose key a listing skipped is counted by that listing
// (back).
func (s *scheduler) settle(seq int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.inflight[seq]
	if errors.Is(err, ErrIndeterminate) {
		if ok {
			m.unknown = true
			s.inflight[seq] = m
		}
		return
	}
	delete(s.inflight, seq)
	if err == nil || !ok {
		return
	}
	for l := range s.listings {
		if _, skipped := l.skipped[seq]; skipped {
			l.back[seq] = m
		}
	}
}

// delayListing is a scan of the delay index by Engine.Delayed, as the
// scheduler sees it. The scan counts a key whose move is not registered
// when it reaches it, and the moves registered when it is done are counted
// after it: a move registered in between, after the scan counted its key,
// would be counted twice. So the scan records the last key it reached
// (cursor), and register notes the moves of keys the scan has already
// counted (late): the listing does not count those again.
//
// The other way round, the scan skips the key of a registered move, which
// the listing counts only if it is still registered when the scan is done:
// a move refused in between puts its key back in the index, behind the
// scan. So the scan records the slots it skipped (skipped), and settle
// hands such a refused move to the listing (back), which counts it unless
// the scheduler registered it again (then it is counted as registered).
type delayListing struct {
	cursor  []byte                 // the last index key the scan reached; under scheduler.mu
	late    map[int64]struct{}     // slots of moves registered after the scan counted their key; under scheduler.mu
	skipped map[int64]struct{}     // slots whose keys the scan skipped as in flight; under scheduler.mu
	back    map[int64]inflightMove // skipped moves refused since and not registered again; under scheduler.mu
}

// startListing registers a scan of the delay index by Engine.Delayed.
func (s *scheduler) startListing() *delayListing {
	l := &delayListing{late: map[int64]struct{}{}, skipped: map[int64]struct{}{}, back: map[int64]inflightMove{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listings == nil {
		s.listings = map[*delayListing]struct{}{}
	}
	s.listings[l] = struct{}{}
	return l
}

// visit records that the scan of l reached index key k, of slot seq, and
// reports whether its move is registered (the scan skips its key).
func (s *scheduler) visit(l *delayListing, k []byte, seq int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.cursor = append(l.cursor[:0], k...)
	_, ok := s.inflight[seq]
	if ok {
		l.skipped[seq] = struct{}{}
	}
	return ok
}

// endListing ends the scan of l and returns, at that same moment, the
// moves it counts in place of keys it did not: the registered moves and
// those of l.back, in the index's order (delivery time, then slot).
// l.late is then final.
func (s *scheduler) endListing(l *delayListing) []inflightMove {
	s.mu.Lock()
	delete(s.listings, l)
	out := make([]inflightMove, 0, len(s.inflight)+len(l.back))
	for _, m := range s.inflight {
		out = append(out, m)
	}
	for _, m := range l.back {
		out = append(out, m)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b inflightMove) int {
		return cmp.Or(a.entry.DeliverAt.Compare(b.entry.DeliverAt), cmp.Compare(a.seq, b.seq))
	})
	return out
}

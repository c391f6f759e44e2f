package equeue

import (
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
// stopped) leaves its key in place: it is unregistered, and the count of
// such releases lets a listing that skipped the key as in flight see that
// it must read the index again.

// inflightMove is a move registered as in flight.
type inflightMove struct {
	entry DelayedEntry
	topic uint32 // the target topic's ID
	seq   int64  // its delay-log slot
}

// register records the move of d as in flight. The caller then queues it.
func (s *scheduler) register(d dueEntry) {
	at, _, _ := parseDelayKey(d.key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight == nil {
		s.inflight = map[int64]inflightMove{}
	}
	s.inflight[d.seq] = inflightMove{entry: DelayedEntry{DeliverAt: at, QueueRef: QueueRef{Queue: int(d.queue)}}, topic: d.topic, seq: d.seq}
}

// settle ends the registration of the move of slot seq whose command
// ended with err: a stored move, now visible, and a move refused with its
// key left in place are unregistered; one of unknown outcome stays
// registered (only a reopen tells where its message is).
func (s *scheduler) settle(seq int64, err error) {
	if errors.Is(err, ErrIndeterminate) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, seq)
	if err != nil {
		s.released++
	}
}

// isInflight reports whether the move of slot seq is registered.
func (s *scheduler) isInflight(seq int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.inflight[seq]
	return ok
}

// inflightMoves returns the registered moves, in the index's order
// (delivery time, then slot), and the count of releases (see settle) so
// far.
func (s *scheduler) inflightMoves() ([]inflightMove, uint64) {
	s.mu.Lock()
	out := make([]inflightMove, 0, len(s.inflight))
	for _, m := range s.inflight {
		out = append(out, m)
	}
	released := s.released
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b inflightMove) int {
		return cmp.Or(a.entry.DeliverAt.Compare(b.entry.DeliverAt), cmp.Compare(a.seq, b.seq))
	})
	return out, released
}

// releases returns the count of moves refused after they were registered.
func (s *scheduler) releases() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released
}

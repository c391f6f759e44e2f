package equeue

// Moves too large for any write. A due message's move costs no more than
// its send (one record and the deletion of its index key, against the
// record and the key), so it fits every write the store took the send in;
// but the store's limits may be smaller when the message comes due (the
// engine opened again on a store with smaller writes). Such a move can
// never be written while the engine runs: dropping the message would lose
// it, and trying it again on every pass would fail each pass, log it each
// time and, once a chunk of the index holds only such messages, move
// nothing else. So the scheduler parks it: its index key and record stay,
// Engine.Delayed lists it as pending, it is reported once at error level,
// and every pass passes over it until a reopen tries it again. It is never
// queued, so the moves queued after it to its queue wait only for the one
// before it (command.after): they are not held back for ever behind a
// move that cannot be written, and it lands after them once a store takes
// it. Once its topic is deleted it is no longer passed over: the pass
// that the deletion brings at once (topicDeleted) drops it, as any due
// message of a deleted topic.

// park passes over the move c of d, refused with err by every write, until
// a reopen, and reports it.
func (s *scheduler) park(d dueEntry, c *command, err error) {
	if s.parked == nil {
		s.parked = map[int64]struct{}{}
	}
	s.parked[d.seq] = struct{}{}
	s.parkedCount.Add(1)
	s.e.log.Error("delayed message too large to move into its queue under the store's write limits; it stays pending until an engine opened on a store that takes it moves it",
		"topic", c.q.topic.name, "topic_id", d.topic, "queue", d.queue, "slot", d.seq, "err", err)
}

// isParked reports whether the scan passes over the due message of slot
// seq for topic: parked, and its topic still there.
func (s *scheduler) isParked(seq int64, topic uint32) bool {
	if _, ok := s.parked[seq]; !ok {
		return false
	}
	if s.e.topicByID(topic) == nil {
		delete(s.parked, seq)
		s.parkedCount.Add(-1)
		return false
	}
	return true
}

// topicDeleted wakes the scheduler for a pass once a topic was deleted,
// when messages are parked: the pass drops those of that topic, which
// would otherwise wait, listed by Engine.Delayed, for a pass something
// else brings (up to the scheduler's idle wait).
func (s *scheduler) topicDeleted() {
	if s.parkedCount.Load() == 0 {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

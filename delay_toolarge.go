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
// it. Once its topic is deleted it is no longer parked nor counted
// (Stats().ParkedDelayedMessages): the pass that the deletion brings at
// once (topicDeleted) drops it, as any due message of a deleted topic.
// DeleteGroup deletes the index keys of its retry topic's messages
// itself, so the scheduler never reaches those again: they are unparked
// when that topic is deleted, with the group.

// park passes over the move c of d, refused with err by every write, until
// a reopen, and reports it once at error level. A topic deleted meanwhile
// takes it back at once (topicDeleted may have run before it was parked):
// its message goes with the topic, an expected outcome told at debug
// level only. A deletion after this look-up unparks it itself.
func (s *scheduler) park(d dueEntry, c *command, err error) {
	s.mu.Lock()
	if s.parked == nil {
		s.parked = map[int64]uint32{}
	}
	s.parked[d.seq] = d.topic
	s.parkedCount.Add(1)
	s.mu.Unlock()
	if s.e.topicByID(d.topic) == nil {
		s.topicDeleted(d.topic)
		s.e.log.Debug("delayed message too large to move into its queue, whose topic was deleted meanwhile: it goes with its topic",
			"topic", c.q.topic.name, "topic_id", d.topic, "queue", d.queue, "slot", d.seq, "err", err)
		return
	}
	s.e.log.Error("delayed message too large to move into its queue under the store's write limits; it stays pending until an engine opened on a store that takes it moves it",
		"topic", c.q.topic.name, "topic_id", d.topic, "queue", d.queue, "slot", d.seq, "err", err)
}

// isParked reports whether the scan passes over the due message of slot
// seq for topic: parked, and its topic still there. Only the scheduler's
// own goroutine parks (park) and asks, so a count of 0 means nothing is
// parked, and the scan's common case takes no lock.
func (s *scheduler) isParked(seq int64, topic uint32) bool {
	if s.parkedCount.Load() == 0 {
		return false
	}
	live := s.e.topicByID(topic) != nil
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.parked[seq]; !ok {
		return false
	}
	if !live {
		delete(s.parked, seq)
		s.parkedCount.Add(-1)
		return false
	}
	return true
}

// topicDeleted unparks the messages of topic id, deleted: they go with it.
// The scheduler is woken for a pass that drops their index keys (DeleteTopic
// leaves them; DeleteGroup deleted those of its retry topic already), which
// would otherwise wait, listed by Engine.Delayed, for a pass something else
// brings (up to the scheduler's idle wait).
func (s *scheduler) topicDeleted(id uint32) {
	if s.parkedCount.Load() == 0 {
		return
	}
	s.mu.Lock()
	n := 0
	for seq, t := range s.parked {
		if t == id {
			delete(s.parked, seq)
			n++
		}
	}
	s.parkedCount.Add(int64(-n))
	s.mu.Unlock()
	if n == 0 {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// unparkSlot unparks the message of delay-log slot seq, whose index key
// was deleted (DeleteGroup deletes those of its retry topic): it is no
// longer pending, so no longer parked nor counted, also when the rest of
// that deletion fails.
func (s *scheduler) unparkSlot(seq int64) {
	if s.parkedCount.Load() == 0 {
		return
	}
	s.mu.Lock()
	if _, ok := s.parked[seq]; ok {
		delete(s.parked, seq)
		s.parkedCount.Add(-1)
	}
	s.mu.Unlock()
}

package equeue

// noteCorrupt counts (Stats().CorruptRecords) and logs a delayed message
// dropped as damaged, once the drop of its index key was stored: its
// record could not be read back, or its index key or value was garbled or
// unreadable. The key is gone then, so neither a later pass nor a reopen
// meets it again, and it is counted once; the record, if any, is trimmed
// with the moved ones or swept on open (sweepDelayLog).
func (s *scheduler) noteCorrupt(d dueEntry) {
	s.e.stats.corrupt.Add(1)
	if d.seq < 0 {
		s.e.log.Error("corrupt delay index entry skipped: its delayed message is lost", "key", d.key, "err", d.damaged)
		return
	}
	s.e.log.Error("corrupt delayed message skipped", "topic_id", d.topic, "queue", d.queue, "slot", d.seq, "err", d.damaged)
}

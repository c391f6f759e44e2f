package equeue

// TopicBytes returns a topic's stored-bytes account (TopicLimits.MaxBytes)
// and whether every queue's account is known; recount is the bytes of the
// records in its queues' visible ranges, read from the store.
func TopicBytes(e *Engine, name string) (account, recount int64, known bool) {
	t, ok := e.lookupTopic(name)
	if !ok {
		return -1, -1, false
	}
	t.retain.mu.Lock()
	defer t.retain.mu.Unlock()
	known = true
	for _, q := range t.queueList() {
		account += q.bytes.stored()
		known = known && q.bytes.known.Load()
		min, next, _ := q.bounds()
		n, err := e.rangeBytes(q, min, next)
		if err != nil {
			return -1, -1, false
		}
		recount += n
	}
	return account, recount, known
}

// RetentionOwed returns what retention owes for queue q of topic name:
// owed, the messages of its cuts that a failed delete left stored below
// the watermark, and uncounted, those of its cuts (owed among them) that
// no RetentionResult has counted yet.
func RetentionOwed(e *Engine, name string, q int) (owed, uncounted int64) {
	t, ok := e.lookupTopic(name)
	if !ok {
		return -1, -1
	}
	t.retain.mu.Lock()
	defer t.retain.mu.Unlock()
	return t.retain.owedOf(q)
}

// StoredWatermarks counts the low watermarks s holds: one for each queue
// that retention or a drop-oldest trim cut.
func StoredWatermarks(s Store) (int, error) {
	n := 0
	err := s.ScanMeta(keyWatermark, func(_, _ []byte) error {
		n++
		return nil
	})
	return n, err
}

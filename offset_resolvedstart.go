package equeue

// A start offset FetchOffsets resolves for a queue the group has no offset
// of (the queue's end for ConsumeFromLatest, the first message at or after
// a time for ConsumeFromTimestamp) is the group's start from then on. When
// the store write of that start fails, the member's apply fails and is
// tried again, maybe after messages were sent to the queue (a Consumer's
// Start returned meanwhile): resolving the start again would put it past
// them, and the group would never get them. So the start resolved is kept
// in the group's memory until an offset of its key is set (stored by a
// FetchOffsets, a commit or a reset), and the next FetchOffsets answers
// it. It is not a committed offset: listings count the group's lag from it
// but show no committed offset. Engine.Close tries once more to store it
// (offset_keptstarts_close.go), so that a reopen forgets it only when
// that write fails too (Close then reports it); the expiry of an absent
// broadcasting member forgets it (groupexpiry.go).

// resolvedStart returns the start kept for k. g.mu must be held.
func (g *group) resolvedStart(k offsetKey) (int64, bool) {
	off, ok := g.starts[k]
	return off, ok
}

// keepStart keeps off as k's start until an offset of k is set. g.mu must
// be held.
func (g *group) keepStart(k offsetKey, off int64) {
	if g.starts == nil {
		g.starts = map[offsetKey]int64{}
	}
	g.starts[k] = off
}

// forgetStartsOf drops the starts kept for topic's queues (the topic was
// deleted: a topic made again under its name starts anew). g.mu must be
// held.
func (g *group) forgetStartsOf(topic string) {
	for k := range g.starts {
		if k.q.Topic == topic {
			delete(g.starts, k)
		}
	}
}

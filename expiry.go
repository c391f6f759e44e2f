package equeue

import (
	"slices"
	"time"
)

// Expiry after the pull. A pull skips the messages whose ExpiresAt has
// passed (pull.go), but a message pulled alive may wait in a consumer
// before its handler gets it: behind other messages of its pull, behind a
// higher priority lane, or for a local retry. A consumer checks it again
// when it would hand it out, so that none is handed out after its
// ExpiresAt: an expired one is finished without a handler (its offset is
// done, as one the pull skipped) and counted as expired.

// expiredNow reports whether m's time-to-live has run out. It reads the
// clock only for a message that has an expiry.
func (m *Message) expiredNow() bool {
	return !m.ExpiresAt.IsZero() && !m.ExpiresAt.After(time.Now())
}

// countExpired counts n messages a client of b pulled alive and dropped
// because they expired before it handed them out: in the engine's
// Stats().ExpiredMessages when b is in-process (an engine behind a remote
// broker does not learn of them).
func countExpired(b Broker, n int) {
	if e := trackerOf(b); e != nil && n > 0 {
		e.stats.expired.Add(uint64(n))
	}
}

// finishExpired finishes m without a handler when it expired after it was
// pulled, and reports whether it did. m must have begun
// (processQueue.begin).
func (r *runner) finishExpired(m *Message) bool {
	if !m.expiredNow() {
		return false
	}
	r.endExpired(m)
	return true
}

// endExpired finishes m, begun and expired, without a handler.
func (r *runner) endExpired(m *Message) {
	r.pq.end(m.Offset, true)
	countExpired(r.c.b, 1)
}

// dropExpired finishes without a handler the messages of msgs that expired
// after they were pulled and returns the others: msgs itself when none
// did. A message that cannot begin (see processQueue.begin) is kept, for
// the caller to find so.
func (r *runner) dropExpired(msgs []*Message) []*Message {
	if !slices.ContainsFunc(msgs, (*Message).expiredNow) {
		return msgs
	}
	live := make([]*Message, 0, len(msgs))
	for _, m := range msgs {
		if m.expiredNow() && r.pq.begin(m.Offset) {
			r.endExpired(m)
			continue
		}
		live = append(live, m)
	}
	return live
}

// pruneAheadLocked drops the messages a gate check read ahead for q
// (priority_pull.go) that expired since: a Fetch does not return them, and
// they hold no lower lane back. When none is left, q's position moves past
// what was read. pc.mu must be held.
func (pc *PullConsumer) pruneAheadLocked(q QueueRef) {
	buf, ok := pc.ahead[q]
	if !ok || !slices.ContainsFunc(buf.msgs, (*Message).expiredNow) {
		return
	}
	live := make([]*Message, 0, len(buf.msgs))
	for _, m := range buf.msgs {
		if !m.expiredNow() {
			live = append(live, m)
		}
	}
	countExpired(pc.b, len(buf.msgs)-len(live))
	if len(live) > 0 {
		pc.ahead[q] = readAhead{msgs: live, next: buf.next}
		pc.positions[q] = live[0].Offset
		return
	}
	delete(pc.ahead, q)
	pc.positions[q] = buf.next
	pc.laneDrainedLocked()
}

package equeue

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// processQueue holds the messages of one owned queue between pull and
// completion, in offset order. Its committable offset is the lowest offset
// not yet done, or one past the last pulled offset when everything is done:
// the sliding window that makes at-least-once commits safe.
type processQueue struct {
	mu       sync.Mutex
	entries  []pqEntry // ascending offsets; entries[:head] are done
	head     int
	count    int   // entries not done
	bytes    int64 // body bytes of entries not done
	running  int   // entries whose handler is running
	pullNext int64 // one past the last offset pulled or skipped
	stopping bool  // only offsets below fence may start a handler
	fence    int64
	changed  chan struct{} // made by wait, closed by the next change: nil while nobody waits
	// restored holds the stored attempts (see OffsetCommit.Attempts) of
	// messages not pulled yet, restoredDone for a message stored done; add
	// moves them onto the pulled messages.
	restored map[int64]int
	retries  uint64 // local retries announced (awaitRetry), naming each
}

// restoredDone marks a message the committed state lists as done.
const restoredDone = -1

type pqEntry struct {
	off     int64
	size    int64
	born    time.Time // when pulled
	started time.Time // when overdue first saw its handler running
	msg     *Message
	done    bool
	running bool
	tried   bool // handed to a handler by the drain (gaps), or left by one (leave)
	// pass lets a message the drain handed out (tried) begin once: gaps
	// and takeRetry give it, begin spends it. A worker's task for the
	// message from before the drain is stale then, and begins it only with
	// the pass, in the drain's or the retry's stead: one hand-out, one run.
	pass bool
	// awaiting names the local retry that will hand the message out again
	// when its delay is over (awaitRetry), 0 for none: whichever of that
	// retry and a drain's gaps takes it first (takeRetry, gaps) runs it,
	// once, and an earlier retry of the message cannot take a later one's.
	awaiting uint64
	// attempts counts the handler runs of an unfinished message retried
	// in place (orderly, broadcasting, failed send-back), or restored from
	// the committed state; zero when its stored record says all.
	attempts int
}

// newProcessQueue starts at the committed state st of its queue.
func newProcessQueue(st OffsetCommit) *processQueue {
	p := &processQueue{pullNext: st.Offset}
	for _, a := range st.Attempts {
		if a.Offset >= st.Offset {
			if p.restored == nil {
				p.restored = make(map[int64]int, len(st.Attempts))
			}
			p.restored[a.Offset] = a.Attempts
			if a.Done {
				p.restored[a.Offset] = restoredDone
			}
		}
	}
	return p
}

func (p *processQueue) signal() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// add records pulled messages and where the next pull starts, and returns
// the messages to handle: msgs without those the committed state listed as
// done (msgs itself when there are none), which are passed over as a pull
// passes over what it skips.
func (p *processQueue) add(msgs []*Message, next int64) []*Message {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	keep, dropped := msgs, false
	for i, m := range msgs {
		attempts := 0
		if n, ok := p.restored[m.Offset]; ok {
			delete(p.restored, m.Offset)
			if n == restoredDone {
				if !dropped {
					keep, dropped = slices.Clone(msgs[:i]), true
				}
				// Kept as a done entry, so that commits go on listing it
				// until the committed offset passes it: a restart after
				// the next commit must not handle it again.
				p.entries = append(p.entries, pqEntry{off: m.Offset, born: now, done: true})
				continue
			}
			m.Attempt = max(m.Attempt, n)
			attempts = n
		}
		if dropped {
			keep = append(keep, m)
		}
		p.entries = append(p.entries, pqEntry{off: m.Offset, size: int64(len(m.Body)), born: now, msg: m, attempts: attempts})
		p.count++
		p.bytes += int64(len(m.Body))
	}
	if next > p.pullNext {
		p.pullNext = next
	}
	p.passDone()
	return keep
}

// passDone moves head past the done entries at the front, and drops them
// once they are most of entries. p.mu must be held.
func (p *processQueue) passDone() {
	for p.head < len(p.entries) && p.entries[p.head].done {
		p.head++
	}
	if p.head > 1024 && p.head*2 > len(p.entries) {
		p.entries = append(p.entries[:0], p.entries[p.head:]...)
		p.head = 0
	}
}

// skip moves the pull position past offsets with nothing to deliver.
func (p *processQueue) skip(next int64) {
	p.mu.Lock()
	if next > p.pullNext {
		p.pullNext = next
	}
	p.mu.Unlock()
}

// find returns the index of off in entries, -1 when it is not there.
// Pulled offsets are mostly dense, so it looks where off would be without
// gaps first, and searches only when it is not there.
func (p *processQueue) find(off int64) int {
	lo, hi := p.head, len(p.entries)
	if lo == hi {
		return -1
	}
	if i := lo + int(off-p.entries[lo].off); i >= lo && i < hi && p.entries[i].off == off {
		return i
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if p.entries[mid].off < off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(p.entries) && p.entries[lo].off == off {
		return lo
	}
	return -1
}

// begin marks off as running; false when off is unknown, finished or
// running, or the queue is stopping and off is not below its fence, or a
// drain handed it out and its run (or its local retry's) has begun
// already (see pqEntry.pass): then the handler must not run.
func (p *processQueue) begin(off int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.find(off)
	if (p.stopping && off >= p.fence) || i < 0 {
		return false
	}
	e := &p.entries[i]
	if e.done || e.running || (e.tried && !e.pass) {
		return false
	}
	e.pass = false
	e.running = true
	e.started = time.Time{} // set by the first overdue that sees it running
	p.running++
	return true
}

// isDone reports whether off is finished (or unknown).
func (p *processQueue) isDone(off int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.find(off)
	return i < 0 || p.entries[i].done
}

// overdue returns the messages whose handlers have run longer than d. A
// handler's start is not timed (a clock read per message costs as much as
// the rest of the hand-over): the first call that sees it running records
// that time, and the handler has run at least as long as since then. So
// overdue never reports a handler early, and reports it at most one call
// interval late.
func (p *processQueue) overdue(d time.Duration) []*Message {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*Message
	for i := p.head; i < len(p.entries); i++ {
		e := &p.entries[i]
		switch {
		case !e.running || e.done:
		case e.started.IsZero():
			e.started = now
		case now.Sub(e.started) > d:
			out = append(out, e.msg)
		}
	}
	return out
}

// end marks a running entry no longer running; done says the message is finished.
func (p *processQueue) end(off int64, done bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.find(off)
	if i < 0 {
		return
	}
	e := &p.entries[i]
	if e.running {
		e.running = false
		p.running--
	}
	if done && !e.done {
		e.done = true
		p.count--
		p.bytes -= e.size
		e.msg = nil
		p.passDone()
	}
	p.signal()
}

// leave ends a running entry whose handler was stopped before it began
// (ErrNotHandled): the message stays unfinished, with no attempt counted,
// and is not handed out again by this runner, a drain's gaps included
// (see pqEntry.tried): it is left to the queue's next owner.
func (p *processQueue) leave(off int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := p.find(off); i >= 0 {
		e := &p.entries[i]
		if e.running {
			e.running = false
			p.running--
		}
		e.tried, e.pass = true, false
	}
	p.signal()
}

// leaveRunning is leave for an entry whose handling ended without an
// outcome (see runner.leaveUnfinished): it does nothing once the entry no
// longer runs.
func (p *processQueue) leaveRunning(off int64) {
	p.mu.Lock()
	i := p.find(off)
	running := i >= 0 && p.entries[i].running
	p.mu.Unlock()
	if running {
		p.leave(off)
	}
}

// expire finishes a running entry whose handler is stuck: the window may
// move past it and handoffs no longer wait for it.
func (p *processQueue) expire(off int64) {
	p.mu.Lock()
	i := p.find(off)
	if i >= 0 && p.entries[i].running {
		p.entries[i].running = false
		p.running--
	}
	p.mu.Unlock()
	p.end(off, true)
}

// committable is the next offset the group may commit for this queue.
func (p *processQueue) committable() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head < len(p.entries) {
		return p.entries[p.head].off
	}
	return p.pullNext
}

// awaitRetry records, as failed does, that the unfinished message at off
// has been handled attempts times so far, and that a local retry will hand
// it out again: it returns the retry's name for takeRetry.
func (p *processQueue) awaitRetry(off int64, attempts int) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retries++
	if i := p.find(off); i >= 0 && !p.entries[i].done {
		p.entries[i].attempts = max(p.entries[i].attempts, attempts)
		p.entries[i].awaiting = p.retries
	}
	return p.retries
}

// takeRetry reports whether retry, a local retry of off that awaitRetry
// announced, is still to run, and takes it: false when a drain handed the
// message out as a gap meanwhile (or it is finished, or failed again and
// waits for a later retry), so that one failure runs it once.
func (p *processQueue) takeRetry(off int64, retry uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.find(off)
	if i < 0 || p.entries[i].done || p.entries[i].awaiting != retry {
		return false
	}
	p.entries[i].awaiting = 0
	p.entries[i].pass = true // the retry's run, should a drain have handed it out
	return true
}

// failed records that the unfinished message at off has been handled
// attempts times so far.
func (p *processQueue) failed(off int64, attempts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := p.find(off); i >= 0 && !p.entries[i].done {
		p.entries[i].attempts = max(p.entries[i].attempts, attempts)
	}
}

// committableState is committable with the attempts of the unfinished
// messages at or above it that were retried in place (or restored and not
// pulled yet), and the messages above it already done, lowest offset
// first, at most MaxCommitAttempts: the attempts first, the done messages
// lowest first in the room they leave (a restart handles again the done
// messages left out, but MaxAttempts holds).
func (p *processQueue) committableState() (int64, []MessageAttempts) {
	p.mu.Lock()
	defer p.mu.Unlock()
	off := p.pullNext
	if p.head < len(p.entries) {
		off = p.entries[p.head].off
	}
	var atts, done []MessageAttempts
	for i := p.head; i < len(p.entries); i++ {
		switch e := &p.entries[i]; {
		case e.done:
			// Above the first unfinished message (entries[head]).
			if len(done) < MaxCommitAttempts {
				done = append(done, MessageAttempts{Offset: e.off, Done: true})
			}
		case e.attempts > 0:
			atts = append(atts, MessageAttempts{Offset: e.off, Attempts: e.attempts})
		}
	}
	for o, n := range p.restored {
		switch {
		case o < off:
		case n == restoredDone:
			if o > off {
				done = append(done, MessageAttempts{Offset: o, Done: true})
			}
		default:
			atts = append(atts, MessageAttempts{Offset: o, Attempts: n})
		}
	}
	byOffset := func(a, b MessageAttempts) int { return cmp.Compare(a.Offset, b.Offset) }
	slices.SortFunc(atts, byOffset)
	atts = atts[:min(len(atts), MaxCommitAttempts)]
	if len(done) > 0 && len(atts) < MaxCommitAttempts {
		slices.SortFunc(done, byOffset)
		atts = append(atts, done[:min(len(done), MaxCommitAttempts-len(atts))]...)
		slices.SortFunc(atts, byOffset)
	}
	return off, atts
}

// stats returns the cached count and bytes, the span between the lowest and
// highest cached offsets, and the age of the oldest entry.
func (p *processQueue) stats() (count int, bytes int64, span int64, oldest time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head < len(p.entries) {
		span = p.entries[len(p.entries)-1].off - p.entries[p.head].off
		oldest = time.Since(p.entries[p.head].born)
	}
	return p.count, p.bytes, span, oldest
}

// waitUnless returns nil when ok holds for the cached count, bytes and
// span (see stats), else a channel closed at the next change; it makes no
// channel when there is nothing to wait for.
func (p *processQueue) waitUnless(ok func(count int, bytes, span int64) bool) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	var span int64
	if p.head < len(p.entries) {
		span = p.entries[len(p.entries)-1].off - p.entries[p.head].off
	}
	if ok(p.count, p.bytes, span) {
		return nil
	}
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.changed
}

// wait returns a channel closed at the next change.
func (p *processQueue) wait() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.changed
}

// stop forbids every new handler.
func (p *processQueue) stop() {
	p.mu.Lock()
	p.stopping = true
	p.fence = -1
	p.signal()
	p.mu.Unlock()
}

// stopIfIdle stops the queue (as stop does) when no handler of it runs,
// and reports whether it did: a drain ends there, so no message begins
// after it returned, committed and released the queue (a local retry due
// later, say, whose message stays uncommitted for the next owner).
func (p *processQueue) stopIfIdle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running > 0 {
		return false
	}
	p.stopping = true
	p.fence = -1
	p.signal()
	return true
}

// stopAfterGaps forbids new handlers except for the gaps: unfinished messages
// below the highest offset already running or finished. Handling those lets
// the committed offset pass everything handled, so the next owner of the
// queue repeats nothing.
func (p *processQueue) stopAfterGaps() {
	p.mu.Lock()
	p.stopping = true
	p.fence = -1
	for i := len(p.entries) - 1; i >= p.head; i-- {
		if e := &p.entries[i]; e.done || e.running {
			p.fence = e.off + 1
			break
		}
	}
	p.signal()
	p.mu.Unlock()
}

// gaps returns the messages below the fence that are neither running nor
// finished and were not returned before, and whether any handler is running.
// Each begins once for it (see pqEntry.pass), whoever begins it: the
// drain, or a worker's task for it from before the drain.
func (p *processQueue) gaps() (msgs []*Message, running bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := p.head; i < len(p.entries) && p.entries[i].off < p.fence; i++ {
		e := &p.entries[i]
		if !e.done && !e.running && !e.tried {
			e.tried, e.pass = true, true
			e.awaiting = 0 // its pending local retry, if any, is taken
			msgs = append(msgs, e.msg)
		}
	}
	return msgs, p.running > 0
}

// poke wakes whoever waits for a change.
func (p *processQueue) poke() {
	p.mu.Lock()
	p.signal()
	p.mu.Unlock()
}

func (p *processQueue) runningCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

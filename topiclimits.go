package equeue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/equeue-go/equeue/store"
)

// OverflowPolicy says what happens to a send that would take a topic past
// its TopicLimits.MaxMessages or TopicLimits.MaxBytes.
type OverflowPolicy int

const (
	// OverflowDropOldest stores the send and then deletes the oldest
	// messages of the topic's longest queues (by count for MaxMessages, by
	// bytes for MaxBytes) until the topic is back within its limits, the
	// way retention deletes them (consumers behind see PullOffsetMoved and
	// jump ahead).
	OverflowDropOldest OverflowPolicy = iota
	// OverflowReject refuses the send with ErrTopicFull and stores nothing
	// of it.
	OverflowReject
)

// String returns "drop-oldest" or "reject".
func (p OverflowPolicy) String() string {
	switch p {
	case OverflowDropOldest:
		return "drop-oldest"
	case OverflowReject:
		return "reject"
	}
	return fmt.Sprintf("OverflowPolicy(%d)", int(p))
}

// ParseOverflowPolicy parses "drop-oldest" or "reject" (and "" as
// drop-oldest, the zero value).
func ParseOverflowPolicy(s string) (OverflowPolicy, error) {
	switch s {
	case "", "drop-oldest":
		return OverflowDropOldest, nil
	case "reject":
		return OverflowReject, nil
	}
	return 0, fmt.Errorf("%w: overflow policy %q: use drop-oldest or reject", ErrInvalidArgument, s)
}

// MarshalText stores the policy by name, so topic metadata reads the same
// whatever the numbering.
func (p OverflowPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses a name written by MarshalText.
func (p *OverflowPolicy) UnmarshalText(b []byte) error {
	v, err := ParseOverflowPolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// TopicLimits are a topic's own limits and defaults. The zero value sets
// none: the topic grows without bound and follows the engine's retention.
type TopicLimits struct {
	// MaxMessages, when positive, bounds the messages stored in the topic,
	// over all its queues (delayed messages count once they are visible).
	// Overflow says what a send beyond it does.
	MaxMessages int64 `json:"max_messages,omitempty"`
	// Overflow is the policy when MaxMessages or MaxBytes is reached. With
	// OverflowReject the topic never holds more than MaxMessages, but for
	// delayed messages: a send is checked when it is accepted, and a due
	// message is made visible even past the limit. With
	// OverflowDropOldest it may hold more for a moment: at most the
	// messages of the appends in flight (a send, Send or SendAsync, is
	// answered only once the topic is trimmed back; delayed messages made
	// visible are trimmed in the background right after).
	Overflow OverflowPolicy `json:"overflow,omitempty"`
	// DefaultTTL, when positive, is the time-to-live of messages sent
	// without one (no TTL and no ExpiresAt), counted from the send, or
	// for a delayed message from its scheduled delivery time (DeliverAt,
	// or the send's time plus Delay), not from when a consumer gets it:
	// its ExpiresAt is its DeliverAt plus DefaultTTL, even when that is
	// shorter than the delay.
	DefaultTTL time.Duration `json:"default_ttl,omitempty"`
	// RetentionAge overrides Options.Retention.MaxAge for this topic: zero
	// keeps the engine's, negative keeps messages with no age limit.
	RetentionAge time.Duration `json:"retention_age,omitempty"`
	// MaxBytes, when positive, bounds the bytes of the messages stored in
	// the topic, over all its queues, counted as stored: each message's
	// encoded record (its body, key, tag, properties and a producer-given
	// ID, with their lengths, plus 21 bytes of fixed fields). Overflow says what a send beyond it
	// does, as for MaxMessages; a send whose own messages exceed MaxBytes
	// is refused with ErrTopicFull under either policy. The count is kept
	// in memory and recounted from the topic's records when the engine
	// opens, so opening costs one read of the topics that set it.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// Unconsumed overrides Options.Retention.KeepUnconsumed for this
	// topic: UnconsumedDefault (zero) follows the engine's policy,
	// UnconsumedKeep keeps messages some subscribed group has not
	// consumed, UnconsumedDrop deletes them by age and size alone.
	Unconsumed UnconsumedPolicy `json:"unconsumed,omitempty"`
}

// IsZero reports whether l sets no limit.
func (l TopicLimits) IsZero() bool { return l == TopicLimits{} }

// Validate reports what is wrong with l.
func (l TopicLimits) Validate() error {
	switch {
	case l.MaxMessages < 0:
		return fmt.Errorf("%w: negative max messages %d", ErrInvalidArgument, l.MaxMessages)
	case l.MaxBytes < 0:
		return fmt.Errorf("%w: negative max bytes %d", ErrInvalidArgument, l.MaxBytes)
	case l.Unconsumed < UnconsumedDefault || l.Unconsumed > UnconsumedDrop:
		return fmt.Errorf("%w: unknown unconsumed policy %d", ErrInvalidArgument, int(l.Unconsumed))
	case l.DefaultTTL < 0:
		return fmt.Errorf("%w: negative default TTL %v", ErrInvalidArgument, l.DefaultTTL)
	case l.Overflow != OverflowDropOldest && l.Overflow != OverflowReject:
		return fmt.Errorf("%w: unknown overflow policy %d", ErrInvalidArgument, int(l.Overflow))
	}
	return nil
}

// String formats the limits for humans, "none" when l sets none.
func (l TopicLimits) String() string {
	if l.IsZero() {
		return "none"
	}
	var parts []string
	if l.MaxMessages > 0 {
		parts = append(parts, fmt.Sprintf("max-messages=%d", l.MaxMessages))
	}
	if l.MaxBytes > 0 {
		parts = append(parts, fmt.Sprintf("max-bytes=%d", l.MaxBytes))
	}
	if l.MaxMessages > 0 || l.MaxBytes > 0 {
		parts = append(parts, fmt.Sprintf("overflow=%s", l.Overflow))
	}
	if l.DefaultTTL > 0 {
		parts = append(parts, fmt.Sprintf("default-ttl=%v", l.DefaultTTL))
	}
	if l.RetentionAge != 0 {
		parts = append(parts, fmt.Sprintf("retention-age=%v", l.RetentionAge))
	}
	if l.Unconsumed != UnconsumedDefault {
		parts = append(parts, fmt.Sprintf("unconsumed=%s", l.Unconsumed))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// topicLimits returns t's limits (the zero value when it has none).
func (t *topic) topicLimits() TopicLimits {
	if l := t.limits.Load(); l != nil {
		return *l
	}
	return TopicLimits{}
}

// setLimits installs l as t's live limits.
func (t *topic) setLimits(l TopicLimits) {
	if l.IsZero() {
		t.limits.Store(nil)
		return
	}
	t.limits.Store(&l)
}

// SetTopicLimits replaces a topic's limits and defaults. They are stored in
// the topic's metadata first and apply from the next send; lowering
// MaxMessages under OverflowDropOldest trims the topic at once (should that
// fail, the background trimmer and the next send retry it). On an error
// matching ErrIndeterminate the new limits are in force but may not be
// durable; on any other error the old ones still hold.
func (e *Engine) SetTopicLimits(ctx context.Context, name string, l TopicLimits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if err := validateTopicName(name, true); err != nil { // whether or not the topic exists
		return err
	}
	e.adminMu.Lock()
	t, ok := e.lookupTopic(name)
	if !ok {
		e.adminMu.Unlock()
		return fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	// A MaxBytes needs the topic's stored bytes counted before it applies;
	// no trim runs from the count until the limit is in force.
	t.retain.mu.Lock()
	if l.MaxBytes > 0 {
		if err := e.countBytes(t); err != nil {
			t.retain.mu.Unlock()
			e.adminMu.Unlock()
			return fmt.Errorf("equeue: set limits of %q: %w", name, err)
		}
	}
	m := t.meta()
	m.Limits = nil
	if !l.IsZero() {
		m.Limits = &l
	}
	applied, err := e.saveTopicMeta(m)
	if !applied {
		t.retain.mu.Unlock()
		e.adminMu.Unlock()
		return fmt.Errorf("equeue: set limits of %q: %w", name, err)
	}
	t.setLimits(l)
	t.retain.mu.Unlock()
	e.adminMu.Unlock()
	e.log.Info("topic limits set", "topic", name, "limits", l.String())
	if err != nil {
		return notDurable(err, "set limits of %q", name)
	}
	if terr := e.trimOver(ctx, t); terr != nil {
		// The limits hold; the trim is left to the background trimmer
		// and the next send, as after any send.
		e.log.Warn("trimming a topic to its new limit", "topic", name, "err", terr)
		e.kickTrim(t)
	}
	return nil
}

// defaultTTL gives m the topic's default time-to-live when it has none.
func (t *topic) defaultTTL(m *Message, now time.Time) *Message {
	l := t.limits.Load()
	if l == nil || l.DefaultTTL <= 0 || m.TTL > 0 || !m.ExpiresAt.IsZero() {
		return m
	}
	// A delayed message's life starts when it is delivered, as a message's
	// life in a queue starts when it enters it.
	from := now
	switch {
	case m.Delay > 0:
		from = now.Add(m.Delay)
	case m.DeliverAt.After(now):
		from = m.DeliverAt
	}
	cp := *m
	cp.ExpiresAt = from.Add(l.DefaultTTL)
	return &cp
}

// overLimit returns the ErrTopicFull refusal of recs when adding them to
// the batch's view of t would pass a rejecting limit, or when they alone
// exceed t's MaxBytes under either policy; else nil. Only the writer calls
// it: it reads the next offsets and bytes the batch has appended so far
// (b), each queue's low watermark and byte account.
func (b *batchState) overLimit(t *topic, recs [][]byte) error {
	l := t.limits.Load()
	if l == nil || (l.MaxMessages <= 0 && l.MaxBytes <= 0) {
		return nil
	}
	size := recBytes(recs)
	if l.MaxBytes > 0 && size > l.MaxBytes {
		return fmt.Errorf("%w: %q holds at most %d bytes, the send has %d", ErrTopicFull, t.name, l.MaxBytes, size)
	}
	if l.Overflow != OverflowReject {
		return nil
	}
	var count, bytes int64
	for _, q := range t.queueList() {
		next, pending := q.wnext, int64(0)
		for i := range b.queues {
			if b.queues[i].q == q {
				next, pending = b.queues[i].next, b.queues[i].bytes
			}
		}
		min, _, lost := q.extent()
		count += lost.held(min, next)
		bytes += q.bytes.stored() + pending
	}
	switch {
	case l.MaxMessages > 0 && count+int64(len(recs)) > l.MaxMessages:
		return fmt.Errorf("%w: %q holds its maximum of %d messages", ErrTopicFull, t.name, l.MaxMessages)
	case l.MaxBytes > 0 && bytes+size > l.MaxBytes:
		return fmt.Errorf("%w: %q holds %d of its maximum of %d bytes, the send has %d", ErrTopicFull, t.name, bytes, l.MaxBytes, size)
	}
	return nil
}

// trimOver deletes the oldest messages of t's longest queues until t holds
// at most its MaxMessages and MaxBytes, when its policy is
// OverflowDropOldest. Passes over one topic take turns with each other and
// with retention.
func (e *Engine) trimOver(ctx context.Context, t *topic) error {
	l := t.limits.Load()
	if !dropsOver(t, l) {
		return nil
	}
	t.retain.mu.Lock()
	defer t.retain.mu.Unlock()
	if t.deleted.Load() {
		return nil
	}
	// The limits in force now: SetTopicLimits changes them under
	// retain.mu, counting the bytes first when it sets a MaxBytes, and a
	// cut under limits read before that would leave the count unknown
	// (byteAccount.cut) under a MaxBytes.
	if l = t.limits.Load(); !dropsOver(t, l) {
		return nil
	}
	qs := t.queueList()
	lens := make([]int64, len(qs))
	mins := make([]int64, len(qs))
	losts := make([]lostRanges, len(qs))
	var count int64
	for i, q := range qs {
		min, next, lost := q.extent()
		mins[i], lens[i], losts[i] = min, lost.held(min, next), lost
		count += lens[i]
	}
	var cuts []int64
	if l.MaxMessages > 0 {
		cuts = levelCuts(lens, count-l.MaxMessages)
	} else {
		cuts = make([]int64, len(qs))
	}
	cutBytes, err := e.byteCuts(qs, mins, lens, losts, cuts, l.MaxBytes)
	if err != nil {
		return err
	}
	// Where each queue's cut ends: past its lost offsets when the cut
	// reaches them, for no record there is left to cut.
	ends := make([]int64, len(qs))
	for i := range qs {
		ends[i] = losts[i].skip(mins[i], cuts[i])
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The new low watermarks of every cut queue go in one write; then, as
	// retention does (deleteBelow), memory follows and the records below
	// are deleted.
	var ops []store.MetaOp
	for i, q := range qs {
		if ends[i] > mins[i] {
			ops = append(ops, store.MetaOp{Key: watermarkKey(q.key), Value: binary.BigEndian.AppendUint64(nil, uint64(ends[i]))})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	applied, err := e.storeMeta(ops...)
	if !applied {
		return fmt.Errorf("equeue: store watermarks of %q: %w", t.name, err)
	}
	t.minMoves.Add(1)
	for i, q := range qs {
		if ends[i] > mins[i] {
			q.setMin(ends[i])
			q.bytes.cut(cutBytes[i], l.MaxBytes > 0)
		}
	}
	t.minMoves.Add(1)
	var errs []error
	for i, q := range qs {
		if ends[i] == mins[i] {
			continue
		}
		if err != nil { // not known durable: delete nothing yet
			t.retain.unswept(q.id, mins[i])
			continue
		}
		if _, serr := e.sweep(q); serr != nil {
			errs = append(errs, serr)
		}
		e.deleteRedrivenBelow(q, ends[i])
		if derr := e.st.DeleteRange(q.key, uint64(mins[i]), uint64(ends[i])); derr != nil {
			t.retain.unswept(q.id, mins[i])
			errs = append(errs, fmt.Errorf("equeue: delete %s/%d below %d: %w", t.name, q.id, ends[i], derr))
		}
	}
	if err != nil {
		return notDurable(err, "watermarks of %q", t.name)
	}
	return errors.Join(errs...)
}

// byteCuts returns the bytes of the records cuts[i] takes from the front of
// each queue (lens[i] records from mins[i], past the offsets losts[i] holds
// no record in), having raised cuts so that the queues hold at most
// maxBytes: while over, the oldest record of the queue with the most bytes
// goes. Without a MaxBytes, or for queues whose account
// is not known, it reads nothing.
func (e *Engine) byteCuts(qs []*queue, mins, lens []int64, losts []lostRanges, cuts []int64, maxBytes int64) ([]int64, error) {
	cutBytes := make([]int64, len(qs))
	left := make([]int64, len(qs)) // bytes each queue keeps
	var total int64
	for i, q := range qs {
		if cuts[i] > 0 && maxBytes > 0 && q.bytes.known.Load() {
			n, err := e.rangeBytes(q, mins[i], losts[i].skip(mins[i], cuts[i]))
			if err != nil {
				return nil, err
			}
			cutBytes[i] = n
		}
		left[i] = q.bytes.stored() - cutBytes[i]
		total += left[i]
	}
	if maxBytes <= 0 || total <= maxBytes {
		return cutBytes, nil
	}
	// Sizes of the next records to cut, read a chunk at a time: a send
	// past the limit usually cuts one or two, so chunks start small.
	sizes := make([][]int64, len(qs))
	chunk := make([]int64, len(qs))
	for total > maxBytes {
		pick := -1
		for i := range qs {
			if cuts[i] < lens[i] && (pick < 0 || left[i] > left[pick]) {
				pick = i
			}
		}
		if pick < 0 {
			break // only records not yet visible remain
		}
		if len(sizes[pick]) == 0 {
			from := losts[pick].skip(mins[pick], cuts[pick])
			chunk[pick] = min(max(2*chunk[pick], 4), 1024)
			to := min(losts[pick].skip(mins[pick], lens[pick]), from+chunk[pick])
			// A chunk ends where the next lost offsets begin: each size
			// read is a record's, one cut, and the lost offsets are
			// passed by skip once the cuts reach them.
			to = min(to, losts[pick].nextStart(from))
			err := e.eachRecordSize(qs[pick], from, to, func(n int64) bool { sizes[pick] = append(sizes[pick], n); return true })
			if err != nil {
				return nil, err
			}
			if len(sizes[pick]) == 0 {
				break // no record where one was counted: cut no further
			}
		}
		n := sizes[pick][0]
		sizes[pick] = sizes[pick][1:]
		cuts[pick]++
		cutBytes[pick] += n
		left[pick] -= n
		total -= n
	}
	return cutBytes, nil
}

// dropsOver reports whether t, under limits l, is over a drop-oldest limit.
func dropsOver(t *topic, l *TopicLimits) bool {
	if l == nil || l.Overflow != OverflowDropOldest {
		return false
	}
	return (l.MaxMessages > 0 && overCount(t, l.MaxMessages)) || (l.MaxBytes > 0 && t.storedBytes() > l.MaxBytes)
}

// overCount reports whether t holds more than limit visible messages.
func overCount(t *topic, limit int64) bool {
	var count int64
	for _, q := range t.queueList() {
		min, next, lost := q.extent()
		count += lost.held(min, next)
	}
	return count > limit
}

// levelCuts returns how many messages to cut from each queue of lengths
// lens so that excess are cut in all, taken from the longest queues first
// (water-filling: every queue above some level is cut down to it).
func levelCuts(lens []int64, excess int64) []int64 {
	cuts := make([]int64, len(lens))
	if excess <= 0 {
		return cuts
	}
	above := func(level int64) int64 {
		var s int64
		for _, n := range lens {
			s += max(n-level, 0)
		}
		return s
	}
	// The highest level whose cut is at least excess.
	lo, hi := int64(0), slices.Max(lens)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if above(mid) >= excess {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	over := above(lo) - excess
	for i, n := range lens {
		cuts[i] = max(n-lo, 0)
		if over > 0 && cuts[i] > 0 {
			cuts[i]--
			over--
		}
	}
	return cuts
}

// kickTrim asks the background trimmer to bring t back to its drop-oldest
// limit when it is over it. The writer calls it after a durable batch; a
// kick lost to a full channel is made again by the next append.
func (e *Engine) kickTrim(t *topic) {
	if !dropsOver(t, t.limits.Load()) {
		return
	}
	select {
	case e.trims <- t:
	default:
	}
}

// trimAtOpen brings every topic over its drop-oldest limit back to it.
// A process killed after a send or SetTopicLimits was stored and before
// the trim that follows it leaves the topic over its limit, and only the
// next send to the topic would kick a trim: until then readers would see
// messages the limit drops, for good if no send comes. Open calls it once
// the writer runs; a failed trim (a read-only store refuses it) is logged
// and left, as before, to the next send.
func (e *Engine) trimAtOpen() {
	e.mu.RLock()
	ts := make([]*topic, 0, len(e.topics))
	for _, t := range e.topics {
		ts = append(ts, t)
	}
	e.mu.RUnlock()
	for _, t := range ts {
		if err := e.trimOver(context.Background(), t); err != nil {
			e.log.Warn("trimming a topic to its limit at open", "topic", t.name, "err", err)
		}
	}
}

// runTrims trims the topics kickTrim names until Close, and on Close the
// ones still named (the writer runs until background work returned), so a
// process that sends asynchronously and closes leaves its topics at their
// limits.
func (e *Engine) runTrims() {
	for {
		select {
		case <-e.closing:
			for {
				select {
				case t := <-e.trims:
					if err := e.trimOver(context.Background(), t); err != nil {
						e.log.Warn("trimming a topic to its limit on close", "topic", t.name, "err", err)
					}
				default:
					return
				}
			}
		case t := <-e.trims:
			// Not bgCtx: a trim cut short by Close would be lost, and one
			// is a few writes.
			if err := e.trimOver(context.Background(), t); err != nil && !errors.Is(err, ErrClosed) {
				e.log.Warn("trimming a topic to its limit", "topic", t.name, "err", err)
			}
		}
	}
}

// trimAnswers holds the answers of asynchronous appends that took a
// drop-oldest topic past its limit (Engine.AppendAsync). trimOver writes
// through the writer, so the completer, which completes the appends,
// cannot run it: it queues the answers here, and one goroutine trims their
// topics and then gives them, in the order they were queued. An answer on
// a topic with answers queued is queued behind them, so the answers of one
// topic keep the order the writer completed its appends in.
type trimAnswers struct {
	// pending counts the answers queued: while it is zero the completer
	// answers every append that needs no trim at once.
	pending atomic.Int64

	mu      sync.Mutex
	queue   []trimAnswer
	topics  map[*topic]int // answers queued per topic
	running bool           // a runTrimAnswers goroutine gives the queue
}

// trimAnswer is one answer waiting for the trim of t.
type trimAnswer struct {
	t   *topic
	res AppendResult
	cb  func(AppendResult, error)
}

// answerAppended gives cb the answer res of a stored asynchronous append to
// t: at once, or, when t is over a drop-oldest limit (or has answers
// queued), once t is trimmed back. The completer calls it.
func (e *Engine) answerAppended(t *topic, res AppendResult, cb func(AppendResult, error)) {
	l := t.limits.Load()
	over := l != nil && dropsOver(t, l)
	if !over && e.trimmed.pending.Load() == 0 {
		cb(res, nil)
		return
	}
	a := &e.trimmed
	a.mu.Lock()
	if !over && a.topics[t] == 0 {
		a.mu.Unlock()
		cb(res, nil)
		return
	}
	start := !a.running
	if start {
		// The goroutine holds a call in progress, so Close waits for it
		// while the writer still runs its trims.
		if e.enter(context.Background()) != nil {
			a.mu.Unlock()
			e.kickTrim(t) // closing: the trimmer's final pass trims t if it still can
			cb(res, nil)
			return
		}
		a.running = true
	}
	if a.topics == nil {
		a.topics = make(map[*topic]int)
	}
	a.queue = append(a.queue, trimAnswer{t: t, res: res, cb: cb})
	a.topics[t]++
	a.pending.Add(1)
	a.mu.Unlock()
	if start {
		e.goFunc(e.runTrimAnswers)
	}
}

// runTrimAnswers trims the topics of the queued answers and gives them
// until the queue is empty: each round trims a topic once for all its
// answers in the queue.
func (e *Engine) runTrimAnswers() {
	defer e.leave()
	a := &e.trimmed
	var batch []trimAnswer
	var done []*topic
	for {
		a.mu.Lock()
		if len(a.queue) == 0 {
			a.running = false
			a.mu.Unlock()
			return
		}
		batch, a.queue = a.queue, batch[:0]
		a.mu.Unlock()
		done = done[:0]
		for _, w := range batch {
			if slices.Contains(done, w.t) {
				continue
			}
			done = append(done, w.t)
			// Not the append's ctx: the append is stored, and its trim is a
			// few writes (as for the background trimmer).
			if err := e.trimOver(context.Background(), w.t); err != nil {
				e.log.Warn("trimming a topic to its limit", "topic", w.t.name, "err", err)
				e.kickTrim(w.t) // a failed trim is retried in the background
			}
		}
		for _, w := range batch {
			w.cb(w.res, nil)
		}
		a.mu.Lock()
		for _, w := range batch {
			if a.topics[w.t]--; a.topics[w.t] <= 0 {
				delete(a.topics, w.t)
			}
		}
		a.pending.Add(-int64(len(batch)))
		a.mu.Unlock()
		clear(batch)
	}
}

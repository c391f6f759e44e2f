package equeue

import (
	"context"
	"fmt"
	"maps"
	"time"
)

// AppendRequest asks the broker to store messages in one queue, in order.
type AppendRequest struct {
	// Topic is the topic to append to; it must exist unless the engine
	// auto-creates topics.
	Topic string
	// Queue is the queue number, from 0; it must be writable.
	Queue int
	// Messages are stored in this order at consecutive offsets, all or
	// none.
	Messages []*Message
	// Sync overrides the engine's sync policy for this append when non-nil.
	Sync *SyncPolicy

	// detached is set by Producer.SendAsync on an in-process engine: its
	// caller does not wait for the append (command.waits).
	detached bool
}

// AppendResult reports where an append landed.
type AppendResult struct {
	// Queue is the queue the messages were stored in.
	Queue int
	// FirstOffset is the offset of the first message; the others follow densely.
	FirstOffset int64
	// StoredAt is when the engine stored the messages (for delayed ones:
	// when they were accepted).
	StoredAt time.Time
	// IDs are the message IDs, in order (generated where the message had none).
	IDs []string
	// Delayed is set when the messages were scheduled for later delivery:
	// they get their offsets when they become visible, and FirstOffset is -1.
	Delayed bool
	// Duplicate is set when the topic's dedup window already held the
	// messages' IDs: nothing was stored again and the offsets are the
	// originals' as their send answered them (-1 for delayed ones, with
	// Delayed set, also once they became due).
	Duplicate bool
}

// Route is what a producer needs to pick a queue.
type Route struct {
	// Topic is the topic name.
	Topic string
	// Queues is the topic's queue count.
	Queues int
	// Writable lists the queue IDs open to producers, ascending.
	Writable []int
	// Priorities is the topic's lane count per queue (TopicOptions.Priorities),
	// 0 without priorities: Queues then counts lanes, and queue ID i is
	// lane i % Priorities of queue i / Priorities.
	Priorities int
}

// Route returns topic's queues, creating the topic when auto-create is on.
// An engine-internal topic (%RETRY%<group>, %DLQ%<group>) gets
// ErrInternalTopic, whether or not it exists; an unknown topic
// ErrTopicNotFound, or ErrInvalidName for a bad name.
//
// Broker seam: Producers call Route to pick a queue; applications
// need not.
func (e *Engine) Route(ctx context.Context, topicName string) (Route, error) {
	if err := e.enter(ctx); err != nil {
		return Route{}, err
	}
	defer e.leave()
	if err := checkClientAppend(ctx, topicName); err != nil { // whether or not the topic exists yet
		return Route{}, err
	}
	if err := e.ensureReplyTopic(ctx, topicName); err != nil {
		return Route{}, err
	}
	t, err := e.topicFor(ctx, topicName)
	if err != nil {
		return Route{}, err
	}
	qs := t.queueList()
	r := Route{Topic: t.name, Queues: len(qs), Writable: make([]int, 0, len(qs)), Priorities: t.lanes}
	for _, q := range qs {
		if q.writable.Load() {
			r.Writable = append(r.Writable, q.id)
		}
	}
	return r, nil
}

// Append stores messages in one queue and returns once they are written
// (and durable, under SyncAlways). Concurrent appends share store writes and
// fsyncs. An error matching ErrIndeterminate means the outcome is unknown:
// the store took the write but its fsync failed, or ctx ended after the
// engine took the write (the error then matches ctx's error too; a ctx
// that ended before gives its error alone, nothing stored): retry with the
// same message IDs on a topic with a dedup window to store them at most once.
// Any other error means nothing was stored.
//
// A request without messages, a nil message or one naming another topic
// is refused with ErrInvalidArgument, a negative Delay or TTL with
// ErrInvalidDelay and a bad Sync with ErrInvalidOptions, before the topic
// is looked up: whether or not it exists, and without auto-creating it.
// Then an unknown topic gets ErrTopicNotFound (or ErrInvalidName, unless
// Options.AutoCreateTopics), a queue outside it ErrQueueNotFound.
//
// Broker seam: Producers call Append; applications send with a Producer
// (Send, SendBatch, SendAsync) instead.
func (e *Engine) Append(ctx context.Context, req *AppendRequest) (AppendResult, error) {
	c := getCommand()
	ids, err := e.appendWait(ctx, req, c, time.Now())
	if err != nil {
		return AppendResult{}, err
	}
	if len(ids) == 1 {
		ids = []string{ids[0]} // ids is c.id1, which goes back to the pool with c
	}
	res, err := e.appendResult(req, c, ids)
	e.trimAfter(ctx, c, err)
	c.release()
	return res, err
}

// sendOne is Append of the one message m for an in-process Producer, with
// now as the time of the send: it sets *res to what Send returns, without
// the request, the result and their slices on the heap. On an error *res
// is left as it was.
func (e *Engine) sendOne(ctx context.Context, topic string, queue int, m *Message, sync *SyncPolicy, now time.Time, res *SendResult) error {
	c := getCommand()
	c.msg1[0] = m // the request's one-message slice, on c: no allocation
	req := AppendRequest{Topic: topic, Queue: queue, Messages: c.msg1[:], Sync: sync}
	ids, err := e.appendWait(ctx, &req, c, now)
	if err != nil {
		return err
	}
	if c.err != nil {
		err = c.failure(topic, queue)
	} else {
		q, off := c.landed(queue)
		*res = SendResult{ID: ids[0], Topic: topic, Queue: q, Offset: off, StoredAt: c.storedAt, Delayed: off < 0, Duplicate: c.duplicate}
	}
	e.trimAfter(ctx, c, err)
	c.release()
	return err
}

// appendWait validates and encodes req into c, a command from getCommand,
// as of now, queues it and waits for the writer. With a nil error the
// writer completed c, and the caller releases it once it has read the
// results (ids may alias c); otherwise appendWait has released c, or left
// it to the writer when ctx ended while it was queued.
func (e *Engine) appendWait(ctx context.Context, req *AppendRequest, c *command, now time.Time) ([]string, error) {
	if err := e.enter(ctx); err != nil {
		c.release()
		return nil, err
	}
	ids, err := e.prepareInto(ctx, req, c, now)
	if err != nil {
		e.leave()
		c.release()
		return nil, err
	}
	c.trimsAfter = true
	err = e.enqueue(ctx, c)
	e.leave()
	if err != nil {
		c.release() // not queued
		return nil, err
	}
	if !awaitSignal(ctx, c) {
		return nil, queuedUnknown(ctx.Err()) // the writer may still hold c: not released
	}
	return ids, nil
}

// retryOriginProps are the system properties the engine writes on the
// copies of a failed message (retry.go): where it came from and why it
// failed. Only the engine's own stores carry them.
var retryOriginProps = [...]string{SysOriginTopic, SysOriginTopicID, SysOriginQueue, SysOriginOffset, SysOriginPriority, SysLastError}

// withoutRetryOrigin is m without retryOriginProps (a copy when it had
// any): a client's append cannot give a message an origin, whether
// forged (a remote client sends system properties as it likes) or
// carried over from a consumed retry that an application sends on. A
// failed message's copies then name the topic it was stored in, and a
// redrive sends it back there. Other system properties (a request's reply
// address) stay.
func withoutRetryOrigin(m *Message) *Message {
	if len(m.sys) == 0 {
		return m
	}
	has := false
	for _, k := range retryOriginProps {
		_, ok := m.sys[k]
		has = has || ok
	}
	if !has {
		return m
	}
	cp := *m
	cp.sys = maps.Clone(m.sys)
	for _, k := range retryOriginProps {
		delete(cp.sys, k)
	}
	if len(cp.sys) == 0 {
		cp.sys = nil
	}
	return &cp
}

// recordLimit is the most bytes one encoded record may take: the
// engine's MaxMessageSize, or the store's value limit when smaller.
func (e *Engine) recordLimit() int {
	if v := e.limits.MaxValueSize; v > 0 && v < e.opts.MaxMessageSize {
		return v
	}
	return e.opts.MaxMessageSize
}

// trimAfter trims the topic of a completed append to its limit: under
// OverflowDropOldest the send that passed the limit trims before it
// returns; a failed trim is retried by the next send.
func (e *Engine) trimAfter(ctx context.Context, c *command, err error) {
	if err == nil && c.kind == cmdAppend {
		if terr := e.trimOver(ctx, c.q.topic); terr != nil {
			e.log.Warn("trimming a topic to its limit", "topic", c.q.topic.name, "err", terr)
		}
	}
}

// appendResult turns a completed command into Append's answer.
func (e *Engine) appendResult(req *AppendRequest, c *command, ids []string) (AppendResult, error) {
	if c.err != nil {
		return AppendResult{}, c.failure(req.Topic, req.Queue)
	}
	q, first := c.landed(req.Queue)
	return AppendResult{Queue: q, FirstOffset: first, StoredAt: c.storedAt, IDs: ids, Duplicate: c.duplicate, Delayed: first < 0}, nil
}

// failure is the error of a completed command that failed, sent to queue
// of topic.
func (c *command) failure(topic string, queue int) error {
	return fmt.Errorf("equeue: append to %s/%d: %w", topic, queue, c.err)
}

// landed is where a completed command's messages are, for a request to
// queue: their queue and first offset, -1 when they were delayed (they get
// offsets when they become visible). A duplicate's are the original's.
func (c *command) landed(queue int) (int, int64) {
	switch {
	case c.duplicate:
		return c.dupQueue, c.first
	case c.kind == cmdDelay:
		return queue, -1
	}
	return c.q.id, c.first
}

// AppendAsync is Append that reports through cb instead of blocking. cb runs
// exactly once, on one of the engine's goroutines or the caller's, and must
// not block, panic or call runtime.Goexit: the goroutine that completes the
// engine's writes may run it (Producer.SendAsync runs its hooks on a
// goroutine of its own for that reason). Like Append, an append that takes its topic past an
// OverflowDropOldest limit is answered only once the topic is trimmed back
// (on another goroutine of the engine's; the appends of one topic are still
// answered in the order they were stored). Any other append is answered on
// the goroutine that completes the engine's writes.
//
// Broker seam: Producer.SendAsync calls it; applications use SendAsync.
func (e *Engine) AppendAsync(ctx context.Context, req *AppendRequest, cb func(AppendResult, error)) {
	if err := e.enter(ctx); err != nil {
		cb(AppendResult{}, err)
		return
	}
	defer e.leave()
	c, ids, err := e.prepareAppend(ctx, req)
	if err != nil {
		cb(AppendResult{}, err)
		return
	}
	c.trimsAfter = true // answerAppended trims before it answers
	c.detached = req.detached
	c.done = func(c *command) {
		res, err := e.appendResult(req, c, ids)
		if err != nil || c.duplicate || c.kind != cmdAppend {
			cb(res, err)
			return
		}
		e.answerAppended(c.q.topic, res, cb)
	}
	if err := e.enqueue(ctx, c); err != nil {
		cb(AppendResult{}, err)
	}
}

// prepareAppend validates and encodes the messages of req in a new command.
// The command it returns is sealed and known to fit in one store write.
func (e *Engine) prepareAppend(ctx context.Context, req *AppendRequest) (*command, []string, error) {
	r := new(command)
	ids, err := e.prepareInto(ctx, req, r, time.Now())
	if err != nil {
		return nil, nil, err
	}
	return r, ids, nil
}

// prepareInto is prepareAppend as of now into r, a zero command (but for
// its signal channel). The IDs it returns alias r for a single message.
func (e *Engine) prepareInto(ctx context.Context, req *AppendRequest, r *command, now time.Time) ([]string, error) {
	if err := checkAppendRequest(req); err != nil { // before the topic is looked up, or made
		return nil, err
	}
	if err := checkClientAppend(ctx, req.Topic); err != nil { // internal topics: sendback.go
		return nil, err
	}
	t, err := e.topicFor(ctx, req.Topic)
	if err != nil {
		return nil, err
	}
	q, err := t.queue(req.Queue)
	if err != nil {
		return nil, err
	}
	if !q.writable.Load() {
		return nil, fmt.Errorf("%w: %s/%d", ErrQueueNotWritable, t.name, q.id)
	}
	sync := e.opts.Sync
	if req.Sync != nil { // validated by checkAppendRequest
		sync = *req.Sync
		if sync.kind == syncInterval {
			e.requestFlushEvery(sync.every)
		}
	}
	r.kind, r.q, r.sync = cmdAppend, q, sync.kind == syncAlways
	var ids []string
	if len(req.Messages) == 1 { // the common Send: no extra slices
		r.recs, ids = r.rec1[:], r.id1[:]
	} else {
		r.recs, ids = make([][]byte, len(req.Messages)), make([]string, len(req.Messages))
	}
	var dues []time.Time
	named := 0 // messages with a producer-supplied ID
	// An engine's own store of a message (a send-back, a redrive) is
	// stored again as it was; an internal append keeps its origin too.
	again := isStoredAgain(ctx)
	keepOrigin := again || internalAllowed(ctx, req.Topic)
	for i, m := range req.Messages { // none nil: checkAppendRequest
		if !keepOrigin {
			m = withoutRetryOrigin(m)
		}
		m = t.defaultTTL(m, now)
		if m.Delay > 0 || m.TTL > 0 {
			cp := *m
			if m.Delay > 0 {
				cp.DeliverAt = now.Add(m.Delay)
			}
			if m.TTL > 0 {
				cp.ExpiresAt = now.Add(m.TTL)
			}
			m = &cp
		}
		if m, err = validateMessage(i, m, again); err != nil {
			return nil, err
		}
		if m.DeliverAt.After(now) {
			if m.DeliverAt.Sub(now) > e.opts.MaxDelay {
				return nil, fmt.Errorf("%w: message %d: delivery at %s is beyond the %v limit", ErrInvalidDelay, i, m.DeliverAt.UTC().Format(time.RFC3339Nano), e.opts.MaxDelay)
			}
			if !m.ExpiresAt.IsZero() && !m.ExpiresAt.After(m.DeliverAt) && !again {
				// It would never be delivered. (A retry that outlives its
				// message, sent again by the engine, simply expires.)
				return nil, fmt.Errorf("%w: message %d expires at %s, not after its delivery at %s", ErrInvalidDelay, i, m.ExpiresAt.UTC().Format(time.RFC3339Nano), m.DeliverAt.UTC().Format(time.RFC3339Nano))
			}
			if n := len(dues); n > 0 && m.DeliverAt.Before(dues[n-1]) {
				// Each message is moved at its own time: one due before
				// an earlier message of the append would land ahead of
				// it, and the append is stored in its order.
				return nil, fmt.Errorf("%w: message %d: delivery at %s is before an earlier message's at %s; an append is delivered in its order", ErrInvalidDelay, i, m.DeliverAt.UTC().Format(time.RFC3339Nano), dues[n-1].UTC().Format(time.RFC3339Nano))
			}
			dues = append(dues, m.DeliverAt)
		}
		id, born := m.ID, m.BornAt
		var rec []byte
		if id == "" {
			raw, at := e.ids.nextRaw(now)
			if born.IsZero() {
				born = at // the record format then keeps the ID's counter in no space
			}
			rec, id = encodeRecordNewID(m, raw, born)
		} else {
			if born.IsZero() {
				born = now
			}
			rec = encodeRecord(m, id, born)
		}
		if limit := e.recordLimit(); len(rec) > limit {
			return nil, fmt.Errorf("%w: message %d is %d bytes encoded, limit %d", ErrMessageTooLarge, i, len(rec), limit)
		}
		r.recs[i] = rec
		ids[i] = id
		if m.ID != "" {
			named++
		}
	}
	if t.dedup > 0 && named > 0 {
		r.dedupIDs = dedupIDsOf(req.Messages, ids, named)
	}
	if len(dues) > 0 {
		if len(dues) != len(req.Messages) {
			return nil, fmt.Errorf("%w: one append cannot mix delayed and immediate messages", ErrInvalidArgument)
		}
		r.kind, r.q, r.target, r.dues = cmdDelay, e.sched.log, q, dues
	}
	r.seal(e.limits)
	if err := e.fits(r); err != nil {
		return nil, err
	}
	return ids, nil
}

// dedupIDsOf returns the IDs an append of msgs records in its topic's
// dedup window, in the order of msgs: ids, when all named of them carry a
// producer-supplied ID, else a copy with "" for each message whose ID the
// engine generated. Such a message is not recorded, and an append holding
// one is never a duplicate (dedupCheck); the IDs of the others are
// recorded at their own offsets all the same.
func dedupIDsOf(msgs []*Message, ids []string, named int) []string {
	if named == len(msgs) {
		return ids
	}
	d := make([]string, len(msgs))
	for i, m := range msgs {
		if m.ID != "" {
			d[i] = ids[i]
		}
	}
	return d
}

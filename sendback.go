package equeue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/equeue-go/equeue/store"
)

// Errors of the send-back operation and of the engine's internal topics.
var (
	// ErrInternalTopic is returned when a client appends to an engine-internal
	// topic (%RETRY%<group> or %DLQ%<group>): only the engine writes them,
	// through SendBack. Nothing is stored and no topic is created.
	ErrInternalTopic = errors.New("equeue: internal topic is written only by the engine")
	// ErrNotPulled is returned by SendBack when the offset is not below what
	// the member has pulled from the queue under its grant, or the message
	// is no longer stored. Nothing is stored.
	ErrNotPulled = errors.New("equeue: message was not pulled by this member")
	// ErrMessageDeleted is returned by SendBack, together with ErrNotPulled,
	// when the member pulled the message but retention or a topic limit
	// (OverflowDropOldest) deleted it from its queue since: there is
	// nothing left to copy, now or later. Nothing is stored. A Consumer
	// then takes the message as finished (OutcomeDeleted) rather than
	// retrying it without end.
	ErrMessageDeleted = errors.New("equeue: message was deleted from its queue")
)

// SendBackRequest asks the engine to deliver again, later, a message that
// a group member pulled and failed to handle, or to move it to the group's
// dead letters. The engine reads the message itself: a member can send
// back only what it pulled from a queue it owns, and cannot change its
// body or origin.
type SendBackRequest struct {
	// Group is the member's group.
	Group string
	// Member is the member that pulled the message.
	Member string
	// Grant is the queue the message was pulled from (the group's retry
	// topic for a redelivered message), under the epoch of the pull. Epoch
	// 0 means the epoch of the member's latest pull of that queue; the
	// member must still own the queue under it.
	Grant Grant
	// Offset is the message's offset in Grant's queue.
	Offset int64
	// Attempts counts the handler runs so far, the failed one included.
	// The engine stores at least the message's stored attempt count + 1.
	Attempts int
	// Delay is the wait before the redelivery; capped by Options.MaxDelay.
	// Ignored with DeadLetter.
	Delay time.Duration
	// Cause is the handler's error text, kept (up to 1 KiB) with the message.
	Cause string
	// DeadLetter moves the message to %DLQ%<group> instead of %RETRY%<group>.
	DeadLetter bool
}

// SendBackResult says where a sent-back message was stored.
type SendBackResult struct {
	// Topic is %RETRY%<group> or %DLQ%<group>.
	Topic string
	// Attempts is the attempt count stored with the message.
	Attempts int
	// Duplicate is set when the message had been sent back already, by an
	// earlier SendBack whose copy is stored and which the group's commit
	// has not passed yet (a caller retrying after an unknown outcome, or a
	// message delivered again after a crash): nothing was stored now, and
	// Topic and Attempts are those of the earlier copy.
	Duplicate bool
}

// SendBack stores a failed message in the group's retry topic (due after
// req.Delay) or dead-letter topic, creating that topic if needed. The
// member must own req.Grant under its epoch and have pulled req.Offset.
// Like Append, if ctx ends first the outcome is unknown.
//
// Broker seam: Consumers call it for a failed handler; a handler
// chooses the outcome by returning RetryAfter or DeadLetter.
func (e *Engine) SendBack(ctx context.Context, req *SendBackRequest) (SendBackResult, error) {
	if err := e.enter(ctx); err != nil {
		return SendBackResult{}, err
	}
	defer e.leave()
	if req == nil {
		return SendBackResult{}, fmt.Errorf("%w: nil send-back request", ErrInvalidArgument)
	}
	if err := ValidateName(req.Group); err != nil {
		return SendBackResult{}, err
	}
	if req.Offset < 0 || req.Delay < 0 || req.Attempts < 0 {
		return SendBackResult{}, fmt.Errorf("%w: negative offset, delay or attempts in send-back", ErrInvalidArgument)
	}
	src := req.Grant.Topic
	if isInternalTopic(src) && src != RetryTopic(req.Group) {
		return SendBackResult{}, fmt.Errorf("%w: group %q cannot send back from %q", ErrFenced, req.Group, src)
	}
	grant := req.Grant
	if grant.Epoch == 0 {
		grant.Epoch = e.marks.epoch(req.Group, req.Member, grant.QueueRef)
	}
	g, model, key, err := e.groups.owner(req.Group, req.Member, grant)
	if err != nil {
		return SendBackResult{}, err
	}
	if model == Broadcasting && !req.DeadLetter {
		return SendBackResult{}, fmt.Errorf("%w: broadcast group %q retries locally; only dead letters are sent back", ErrInvalidArgument, req.Group)
	}
	if !e.marks.pulled(req.Group, req.Member, grant, req.Offset) {
		return SendBackResult{}, fmt.Errorf("%w: %s offset %d in group %q by %q", ErrNotPulled, grant.QueueRef, req.Offset, req.Group, req.Member)
	}
	srcQ, err := e.queueOf(grant.QueueRef)
	if err != nil {
		return SendBackResult{}, err
	}
	// Until the write is queued, hold the group's name gate, which the
	// deletion of the group or of its retry or dead-letter topic closes
	// (groupdelete_gate.go: DeleteTopic takes no sbGate, and would
	// otherwise delete the retry topic and its marks in between, the
	// write then making the topic again and storing a mark of the deleted
	// one), and the gate that a reset or the group's deletion closes to
	// see every mark (fenceSendBacks); check the grant again under them:
	// such a change fences grants first.
	unlockName, err := e.lockNameGate(ctx, req.Group, true, nil)
	if err != nil {
		return SendBackResult{}, err
	}
	if err := g.sbGate.lock(ctx, true, nil); err != nil {
		unlockName()
		return SendBackResult{}, err
	}
	gated := true
	ungate := func() {
		g.sbGate.unlock(true)
		unlockName()
	}
	defer func() {
		if gated {
			ungate()
		}
	}()
	committed, err := g.ownsStill(req.Member, grant, key)
	if err != nil {
		return SendBackResult{}, err
	}
	ref := sentBackRef{k: key, off: req.Offset}
	// A mark answers only while the topic holding its copy is the one it
	// was written to (a group deleted and used again, or an operator's
	// DeleteTopic of it, drops the copy).
	copies := func() (c copyTopics) {
		if t, ok := e.lookupTopic(RetryTopic(req.Group)); ok {
			c.retry = t.id
		}
		if t, ok := e.lookupTopic(DLQTopic(req.Group)); ok {
			c.dlq = t.id
		}
		return c
	}
	if mark, found, err := g.claimSendBack(ctx, ref, srcQ.topic.id, committed, copies); err != nil || found {
		if err != nil {
			return SendBackResult{}, fmt.Errorf("equeue: send back %s offset %d: %w", grant.QueueRef, req.Offset, err)
		}
		return SendBackResult{Topic: mark.topic(req.Group), Attempts: mark.attempts, Duplicate: true}, nil
	}
	// This call holds ref's claim: it goes with the write's completion, or
	// here when nothing was queued.
	queued := false
	defer func() {
		if !queued {
			g.releaseSendBack(ref, nil)
		}
	}()
	m, err := e.readOne(grant.QueueRef, req.Offset)
	if err != nil {
		return SendBackResult{}, err
	}
	view := m
	if strings.HasPrefix(m.Topic, RetryTopicPrefix) {
		view = originView(m)
	}
	mark := sentBackMark{dead: req.DeadLetter, attempts: max(m.Attempt+1, req.Attempts), topicID: srcQ.topic.id}
	target := mark.topic(req.Group)
	var cause error
	if req.Cause != "" {
		cause = errors.New(req.Cause)
	}
	d := derived(view, target, mark.attempts, cause)
	stampPriority(d, srcQ.topic, grant.Queue)
	stampOriginTopic(d, srcQ.topic)
	if !req.DeadLetter && req.Delay > 0 {
		d.DeliverAt = time.Now().Add(min(req.Delay, e.opts.MaxDelay))
	}
	if h := e.sendBackHeldHook.Load(); h != nil {
		(*h)(req.Group)
	}
	start := time.Now()
	c, queued, err := e.queueSendBack(allowInternal(ctx, target), g, srcQ.topic, ref, mark, d)
	ungate()
	gated = false
	if err == nil {
		err = c.wait(ctx)
	}
	if err == nil && c.err != nil {
		err = c.failure(target, 0)
	}
	if err == nil {
		e.trimAfter(ctx, c.command, nil)
	}
	e.observeSendBack(ctx, req, d, start, err)
	if err != nil {
		return SendBackResult{}, err
	}
	return SendBackResult{Topic: target, Attempts: mark.attempts}, nil
}

// sendBackCommand is a send-back's append: its copy and its mark, in one
// write. done is closed once the writer completed it.
type sendBackCommand struct {
	*command
	done chan struct{}
}

// queueSendBack queues the append of d, the copy of the message ref names,
// with ref's mark; queued says whether the writer took it (it then
// releases ref's claim when it completes the write). src is the topic
// the message was pulled from: one deleted already gets nothing
// (ErrTopicNotFound), and its deletion waits until the write is queued
// (topic.gate), so that it finds the mark and deletes it.
func (e *Engine) queueSendBack(ctx context.Context, g *group, src *topic, ref sentBackRef, mark sentBackMark, d *Message) (sendBackCommand, bool, error) {
	c, _, err := e.prepareAppend(storedAgain(ctx), &AppendRequest{Topic: d.Topic, Queue: 0, Messages: []*Message{d}})
	if err != nil {
		return sendBackCommand{}, false, err
	}
	sc := sendBackCommand{command: c, done: make(chan struct{})}
	mark.copyID = sc.dest().topic.id
	c.meta = append(c.meta, store.MetaOp{Key: sentBackKey(g.name, ref.k, ref.off), Value: sentBackValue(mark)})
	c.seal(e.limits)
	if err := e.fits(c); err != nil {
		return sendBackCommand{}, false, err
	}
	c.trimsAfter = true // SendBack trims once it is answered, as Append does
	c.done = func(c *command) {
		var stored *sentBackMark
		if c.err == nil {
			stored = &mark
			// Counted with the write, not by the caller: one whose context
			// ended while the write was queued no longer waits for it.
			sc.dest().sentBack.Add(1)
		}
		g.releaseSendBack(ref, stored)
		close(sc.done)
	}
	// DeleteTopic of src deletes its marks (dropTopicMeta) with src's gate
	// held, through the writer: a write queued before it is done by then,
	// and none is queued after it. Taken after prepareAppend, which may
	// create the copy's topic (e.adminMu, which a deletion takes first).
	src.gate.RLock()
	defer src.gate.RUnlock()
	if src.deleted.Load() {
		return sendBackCommand{}, false, fmt.Errorf("%w: %q was deleted before its message was sent back", ErrTopicNotFound, src.name)
	}
	if err := e.enqueue(ctx, c); err != nil {
		return sendBackCommand{}, false, err
	}
	return sc, true, nil
}

// dest is the queue c stores its copy for: the retry or dead-letter
// queue, also when a delayed retry goes to the delay log first.
func (c sendBackCommand) dest() *queue {
	if c.kind == cmdDelay {
		return c.target
	}
	return c.q
}

// wait waits for the writer to complete c; when ctx ends first, the
// outcome is unknown.
func (c sendBackCommand) wait(ctx context.Context) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		select { // completed as ctx ended: the outcome is known
		case <-c.done:
			return nil
		default:
			return queuedUnknown(ctx.Err())
		}
	}
}

// readOne reads the message stored at ref's offset.
func (e *Engine) readOne(ref QueueRef, off int64) (*Message, error) {
	q, err := e.queueOf(ref)
	if err != nil {
		return nil, err
	}
	recs, err := e.st.Read(q.key, uint64(off), uint64(off)+1, 1, 0)
	if err != nil {
		return nil, fmt.Errorf("equeue: read %s at %d: %w", ref, off, err)
	}
	if len(recs) == 0 || int64(recs[0].Offset) != off {
		// The caller checked that the member pulled it: it was stored,
		// and retention or a topic limit deleted it since.
		return nil, fmt.Errorf("%w: %w: %s offset %d is no longer stored", ErrNotPulled, ErrMessageDeleted, ref, off)
	}
	m, err := decodeRecord(recs[0].Value)
	if err != nil {
		return nil, fmt.Errorf("%w: %s offset %d: %w", ErrCorrupt, ref, off, err)
	}
	m.Topic, m.Queue, m.Offset = ref.Topic, ref.Queue, off
	return m, nil
}

// owner checks that member owns g under its epoch in group and returns the
// group, its message model and the member's offset key of g's queue.
func (c *coordinator) owner(groupName, memberID string, g Grant) (*group, MessageModel, offsetKey, error) {
	grp, err := c.memberGroup(groupName, memberID)
	if err != nil {
		return nil, 0, offsetKey{}, err
	}
	defer grp.mu.Unlock()
	if err := grp.checkGrant(memberID, g); err != nil {
		return nil, 0, offsetKey{}, err
	}
	return grp, grp.model, grp.offsetKeyFor(memberID, g.QueueRef), nil
}

// ownsStill checks again that member owns q under its epoch in g, and
// returns the committed offset of its offset key k (-1: none).
func (g *group) ownsStill(member string, q Grant, k offsetKey) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.members[member]; !ok {
		return 0, fmt.Errorf("%w: %q in group %q", ErrNotMember, member, g.name)
	}
	if err := g.checkGrant(member, q); err != nil {
		return 0, err
	}
	if off, ok := g.offsets[k]; ok {
		return off, nil
	}
	return -1, nil
}

// isInternalTopic reports whether name is an engine-internal topic.
func isInternalTopic(name string) bool {
	return strings.HasPrefix(name, RetryTopicPrefix) || strings.HasPrefix(name, DLQTopicPrefix)
}

// internalKey marks a context of the engine's own write to one internal topic.
type internalKey struct{}

// allowInternal returns ctx allowing the engine to create and write topic.
// Only code of this package can make such a context.
func allowInternal(ctx context.Context, topic string) context.Context {
	return context.WithValue(ctx, internalKey{}, topic)
}

// storedAgain marks ctx as the engine sending a stored message again (a
// send-back, a redrive): its ID was accepted when it was first sent, under
// whatever limit held then, so the ID limit of new sends (MaxIDBytes) does
// not apply to it.
func storedAgain(ctx context.Context) context.Context {
	return context.WithValue(ctx, storedAgainKey{}, true)
}

type storedAgainKey struct{}

func isStoredAgain(ctx context.Context) bool {
	again, _ := ctx.Value(storedAgainKey{}).(bool)
	return again
}

// internalAllowed reports whether ctx allows writing (or creating) the
// internal topic name.
func internalAllowed(ctx context.Context, name string) bool {
	t, _ := ctx.Value(internalKey{}).(string)
	return t == name
}

// checkClientAppend refuses an append to an internal topic that does not
// come from the engine itself.
func checkClientAppend(ctx context.Context, topic string) error {
	if isInternalTopic(topic) && !internalAllowed(ctx, topic) {
		return fmt.Errorf("%w: %q", ErrInternalTopic, topic)
	}
	return nil
}

// pullMarks remembers, per group member and granted queue, the offset below
// which the member has pulled: what it may send back. The zero value is
// ready to use.
type pullMarks struct {
	mu  sync.Mutex
	m   map[markKey]map[string]mark // member -> its mark
	seq uint64                      // counts record calls (mark.seq)
}

type markKey struct {
	group string
	q     QueueRef
}

type mark struct {
	epoch int64
	next  int64
	seq   uint64 // of the last record call for it: a sweep drops it only if unchanged
}

// record notes that member pulled q below next under epoch. Marks of older
// epochs (past owners of the queue) are dropped. A pull of a topic that
// was deleted meanwhile (deleted set; nil if none to check) records
// nothing: it is read under p.mu, which forgetTopic takes after the topic
// is marked deleted, so either that drop sees this mark or this sees the
// topic deleted.
func (p *pullMarks) record(group, member string, g Grant, next int64, deleted *atomic.Bool) {
	k := markKey{group: group, q: g.QueueRef}
	p.mu.Lock()
	defer p.mu.Unlock()
	if deleted != nil && deleted.Load() {
		return
	}
	if p.m == nil {
		p.m = make(map[markKey]map[string]mark)
	}
	ms := p.m[k]
	if ms == nil {
		ms = make(map[string]mark, 1)
		p.m[k] = ms
	}
	for id, mk := range ms {
		if mk.epoch < g.Epoch {
			delete(ms, id)
		}
	}
	p.seq++
	if mk, ok := ms[member]; ok && mk.epoch == g.Epoch && mk.next >= next {
		mk.seq = p.seq
		ms[member] = mk
		return
	}
	ms[member] = mark{epoch: g.Epoch, next: next, seq: p.seq}
}

// epoch returns the epoch of member's latest pull of q, 0 if none.
func (p *pullMarks) epoch(group, member string, q QueueRef) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[markKey{group: group, q: q}][member].epoch
}

// sweep drops the marks of members that are not live (live reports
// which are): a member that left or expired can send nothing back, and
// its marks would otherwise stay for as long as the engine runs, with
// those of deleted groups and topics (a group per Watermill fan-out
// subscription, a broadcasting member per generated ID).
func (p *pullMarks) sweep(live func(group, member string) bool) {
	// Which marks there are, under p.mu; who is live, outside it (live
	// takes group locks, which a group may hold across a store write:
	// under p.mu that would stall every pull meanwhile); then, under p.mu
	// again, only the marks nobody recorded since are dropped, so a
	// member that joined again and pulled keeps its new mark.
	type seen struct {
		k   markKey
		id  string
		seq uint64
	}
	var all []seen
	p.mu.Lock()
	for k, ms := range p.m {
		for id, mk := range ms {
			all = append(all, seen{k, id, mk.seq})
		}
	}
	p.mu.Unlock()
	type gm struct{ group, member string }
	alive := map[gm]bool{}
	var gone []seen
	for _, s := range all {
		key := gm{s.k.group, s.id}
		ok, asked := alive[key]
		if !asked {
			ok = live(s.k.group, s.id)
			alive[key] = ok
		}
		if !ok {
			gone = append(gone, s)
		}
	}
	if len(gone) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range gone {
		ms := p.m[s.k]
		if mk, ok := ms[s.id]; ok && mk.seq == s.seq {
			delete(ms, s.id)
			if len(ms) == 0 {
				delete(p.m, s.k)
			}
		}
	}
}

// forgetTopic drops every member's marks of the queues of topic, which was
// deleted: nothing of it can be sent back any more, and a member that
// stays (one that pulled many short-lived topics) would otherwise keep
// them for as long as it lives, as the sweep drops only the marks of
// members that are gone.
func (p *pullMarks) forgetTopic(topic string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.m {
		if k.q.Topic == topic {
			delete(p.m, k)
		}
	}
}

// size returns the marks held (tests).
func (p *pullMarks) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, ms := range p.m {
		n += len(ms)
	}
	return n
}

// pulled reports whether member pulled offset off of q under its epoch.
func (p *pullMarks) pulled(group, member string, g Grant, off int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	mk, ok := p.m[markKey{group: group, q: g.QueueRef}][member]
	return ok && mk.epoch == g.Epoch && off < mk.next
}

// sendBackRequest names the message behind view (as the consumer pulled
// it) for SendBack, under the grant of its queue's runner.
func (c *Consumer) sendBackRequest(view *Message, attempts int, cause error, dead bool) *SendBackRequest {
	src := view
	if view.pulled != nil {
		src = view.pulled
	}
	ref := QueueRef{Topic: src.Topic, Queue: src.Queue}
	var epoch int64 // 0: the grant of the member's latest pull (a draining runner is no longer listed)
	c.mu.Lock()
	if r := c.runners[ref]; r != nil {
		epoch = r.grant.Epoch
	}
	c.mu.Unlock()
	req := &SendBackRequest{Group: c.o.Group, Member: c.o.ID, Grant: Grant{QueueRef: ref, Epoch: epoch},
		Offset: src.Offset, Attempts: attempts, DeadLetter: dead}
	if cause != nil {
		req.Cause = truncate(cause.Error(), 1024)
	}
	if !dead {
		req.Delay = c.retryDelay(attempts, cause)
	}
	return req
}

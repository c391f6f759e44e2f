package equeue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/equeue-go/equeue/store"
)

// DLQEntry is one message of a group's dead-letter topic.
type DLQEntry struct {
	// Offset is the message's offset in the dead-letter topic.
	Offset int64
	// Message is the message as its handler saw it: original topic, queue
	// and offset, priority lane (see Message.Priority), body, tag, keys and
	// properties.
	Message *Message
	// LastError is the error of the last failed attempt.
	LastError string
	// Attempts is how many times the message was handled.
	Attempts int
	// Redriven is set once the message was sent back to its topic. It is
	// also set when the mark that says so is lost (the store cannot read
	// its value back, or it is garbled): its key still says the dead letter
	// went back, so it is listed as redriven and only a Redrive naming its
	// offset sends it back (again). Such a loss is counted in
	// Stats().CorruptRecords and logged with the group and offset.
	Redriven bool
}

func originView(m *Message) *Message {
	if m.sys[SysOriginTopic] == "" {
		return m
	}
	v := *m
	v.pulled = m
	v.Topic = m.sys[SysOriginTopic]
	v.Queue, _ = strconv.Atoi(m.sys[SysOriginQueue])
	v.Offset, _ = strconv.ParseInt(m.sys[SysOriginOffset], 10, 64)
	return &v
}

// ListDeadLettersRequest selects a page of a group's dead letters.
type ListDeadLettersRequest struct {
	// From is the first offset of the group's dead-letter topic to list
	// (DLQEntry.Offset); 0 starts at the oldest. To page through them, pass
	// the last listed entry's Offset plus one.
	From int64
	// Max is the most entries to return, 1 to MaxPullBatch (1,024). Zero
	// means 32.
	Max int
}

// ListDeadLetters lists a page of group's dead letters (see
// ListDeadLettersRequest), oldest first. A group with no dead-letter topic
// yet has none: the answer is empty, not an error, as it is for a From past
// the last dead letter. A From below the oldest dead letter kept (retention
// or a topic limit trimmed older ones) lists from the oldest kept. A Max outside 0..1024 returns ErrInvalidArgument.
// A dead letter whose redriven mark is lost is listed Redriven (see
// DLQEntry.Redriven).
func (e *Engine) ListDeadLetters(ctx context.Context, group string, req ListDeadLettersRequest) ([]DLQEntry, error) {
	if err := ValidateName(group); err != nil {
		return nil, err
	}
	// Checked here, not only by the pull: a group with no dead-letter
	// topic is refused as one that has it.
	if req.Max < 0 || req.Max > MaxPullBatch {
		return nil, fmt.Errorf("%w: dead letter page of %d not in 0..%d", ErrInvalidArgument, req.Max, MaxPullBatch)
	}
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer e.leave()
	out, _, err := e.listDeadLettersIn(ctx, group, req)
	return out, err
}

// listDeadLettersIn is ListDeadLetters, which also returns the incarnation
// of the dead-letter topic listed (nil when there is none).
func (e *Engine) listDeadLettersIn(ctx context.Context, group string, req ListDeadLettersRequest) ([]DLQEntry, *topic, error) {
	for {
		t, ok := e.lookupTopic(DLQTopic(group))
		if !ok {
			return nil, nil, nil // no dead letters yet
		}
		out, err := e.listDeadLetters(ctx, group, req, t)
		if cur, _ := e.lookupTopic(DLQTopic(group)); cur == t {
			return out, t, err
		}
		// The dead-letter topic was deleted (and maybe created again)
		// while it was read: list what is there now.
	}
}

// listDeadLetters is ListDeadLetters of t, the group's dead-letter topic.
func (e *Engine) listDeadLetters(ctx context.Context, group string, req ListDeadLettersRequest, t *topic) ([]DLQEntry, error) {
	res, err := e.Pull(ctx, &PullRequest{Topic: DLQTopic(group), Offset: req.From, Max: req.Max})
	// Read on while a pull moves on without a dead letter: the oldest were
	// trimmed (list from the first one kept), or it scanned only expired
	// (or damaged) ones. An empty page means none is left.
	for from := req.From; err == nil && (res.Status == PullOffsetMoved || res.Status == PullNoMatch) && res.NextOffset > from; {
		from = res.NextOffset
		res, err = e.Pull(ctx, &PullRequest{Topic: DLQTopic(group), Offset: from, Max: req.Max})
	}
	if errors.Is(err, ErrTopicNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]DLQEntry, 0, len(res.Messages))
	for _, m := range res.Messages {
		dl := DLQEntry{Offset: m.Offset, Message: originView(m), LastError: m.sys[SysLastError], Attempts: m.Attempt}
		dl.Message.pulled = nil // an admin view: nothing to send back
		dl.Message.Priority = originPriority(m, e.topicLanes(dl.Message.Topic))
		if dl.Redriven, err = e.isRedriven(group, t, m.Offset); err != nil {
			return nil, fmt.Errorf("equeue: dead letter %d of %q: %w", m.Offset, group, err)
		}
		out = append(out, dl)
	}
	return out, nil
}

// DeadLetters lists up to max (1..1024; 0 means 32) dead letters of group
// from offset from of its dead-letter topic.
//
// Deprecated: use ListDeadLetters, whose request names the two numbers:
// DeadLetters(ctx, g, from, max) is ListDeadLetters(ctx, g,
// ListDeadLettersRequest{From: from, Max: max}).
func (e *Engine) DeadLetters(ctx context.Context, group string, from int64, max int) ([]DLQEntry, error) {
	return e.ListDeadLetters(ctx, group, ListDeadLettersRequest{From: from, Max: max})
}

// RedriveRequest selects dead letters to send back: the listed Offsets,
// or the range [From, To), or All of them. Offsets are those of the
// dead-letter topic (DLQEntry.Offset). They go to the group's retry topic,
// or with ToTopic to their original topics (see Engine.Redrive).
type RedriveRequest struct {
	// Offsets lists single dead letters to redrive. When set (and All is
	// not), From and To are ignored. A listed dead letter already redriven
	// is passed by, unless its redriven mark is lost (see
	// DLQEntry.Redriven): naming it sends it back and marks it soundly.
	Offsets []int64
	// From and To select the dead letters at offsets From (inclusive) to To
	// (exclusive) when Offsets is empty and All is false.
	From, To int64
	// All redrives every dead letter of the group not redriven yet (nor
	// listed as redriven through a lost mark); it takes precedence over
	// Offsets and the range.
	All bool
	// ToTopic sends the dead letters back to their original topics, as
	// fresh messages, instead of to the group's retry topic: every group
	// subscribed to such a topic then gets them again, not only this one.
	// A group whose members do not consume its retry topic (a broadcasting
	// or orderly group, one of PullConsumers) can be redriven only so.
	ToTopic bool
}

// Redrive sends the selected dead letters of group back to it: to its
// retry topic, which only the group consumes, due at once, as fresh
// retries whose attempt count starts again at 0 (the group gets
// MaxAttempts new runs), which its handler sees as it saw the message
// before: original topic, queue and offset, ID, body, tag, keys,
// properties and expiry. Other groups subscribed to the message's topic,
// which handled it already, do not get it again.
//
// With req.ToTopic they go back to their original topic and queue
// instead (or, when that queue is gone or closed, the queue their key
// routes to), as fresh messages with their ID, body, tag, keys,
// properties and expiry (and a request's reply address), for every group
// subscribed there. Either way, dead letters whose topic is gone are left
// unsent and unmarked: the redrive goes on past them and then returns,
// with the count sent, an error matching ErrTopicNotFound that names them.
// Those of a topic deleted and made again under the name go to the new
// topic (into the retry topic, as retries of it). A group whose
// members do not consume its retry topic (a broadcasting group, whose
// members retry locally, an orderly one, one of PullConsumers, or one the
// engine does not know) has no retry topic to redrive into: without
// ToTopic, Redrive refuses it with ErrInvalidArgument.
//
// Each is marked redriven in the same write, so it is never redriven twice
// (but for one whose mark was lost and that req.Offsets names: see
// DLQEntry.Redriven); the engine's redrives run one at a time, so two at once do not both send
// a dead letter neither had seen marked. One whose ctx ended while the
// engine wrote a dead letter's copy and mark returns, the outcome unknown,
// but the next redrive waits for that write. A DeleteGroup of the group
// (also of one the engine does not hold, which only ToTopic redrives)
// during the redrive waits for the dead letter being sent, and deletes
// its copy and mark with the group; after it the redrive stops with
// ErrGroupNotFound, sending nothing more. It returns how many were sent.
//
// It returns ErrInvalidName for a bad group name and ErrInvalidArgument for
// a request that selects nothing (no All, no Offsets and no From < To) or
// names a negative offset, whether or not the group has dead letters; then
// ErrTopicNotFound for a group that has none (no dead-letter topic), and
// ErrInvalidArgument for offsets outside its dead-letter queue.
func (e *Engine) Redrive(ctx context.Context, group string, req RedriveRequest) (int, error) {
	if err := ValidateName(group); err != nil {
		return 0, err
	}
	if err := req.check(); err != nil { // before the group's dead letters are looked at
		return 0, err
	}
	if err := e.enter(ctx); err != nil { // a nil ctx, or a closed engine
		return 0, err
	}
	defer e.leave()
	select {
	case e.redriving <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	var left <-chan struct{} // a write still on its way when it returns (redriveOne)
	defer func() { e.endRedrive(left) }()
	t, ok := e.lookupTopic(DLQTopic(group))
	if !ok {
		return 0, fmt.Errorf("%w: group %q has no dead letters", ErrTopicNotFound, group)
	}
	q, err := t.queue(0)
	if err != nil {
		return 0, err
	}
	min, next, _ := q.bounds()
	want := func(off int64) bool { return true }
	from, to := min, next
	explicit := false // the dead letters are named one by one
	switch {
	case req.All:
	case len(req.Offsets) > 0:
		explicit = true
		want = func(off int64) bool { return slices.Contains(req.Offsets, off) }
		from, to = slices.Min(req.Offsets), slices.Max(req.Offsets)
		if to < math.MaxInt64 { // the largest offset has no end past it: refused below
			to++
		}
	default: // a range: req.check made sure of it
		from, to = req.From, req.To
	}
	if from < min || to > next || from < 0 {
		return 0, fmt.Errorf("%w: dead letters %d..%d outside [%d, %d)", ErrInvalidArgument, from, to, min, next)
	}
	// The group, nil when the engine does not know it (only ToTopic
	// redrives such a group): each send holds off its deletion
	// (redriveOne).
	g, _ := e.groups.group(group)
	if !req.ToTopic {
		if err := checkRetryConsumed(group, g); err != nil {
			return 0, err
		}
	}
	sent := 0
	var gone goneTopics // dead letters left, their topics deleted
	for off := from; off < to; {
		dls, dlq, err := e.listDeadLettersIn(ctx, group, ListDeadLettersRequest{From: off, Max: MaxPullBatch})
		if err != nil {
			return sent, err
		}
		if dlq != t {
			// The offsets chosen were of a topic deleted meanwhile.
			return sent, fmt.Errorf("%w: the dead letters of %q were deleted during the redrive", ErrTopicNotFound, group)
		}
		if len(dls) == 0 {
			break
		}
		for _, dl := range dls {
			off = dl.Offset + 1
			if dl.Offset >= to {
				break
			}
			if !want(dl.Offset) {
				continue
			}
			if dl.Redriven {
				// Passed by, unless named (explicit) with its mark lost:
				// naming it is the user's word that it goes back.
				lost, err := e.namedLostMark(explicit, group, dl.Offset)
				if err != nil {
					return sent, gone.along(fmt.Errorf("equeue: redrive dead letter %d: %w", dl.Offset, err))
				}
				if !lost {
					continue
				}
			}
			var err error
			if left, err = e.redriveOne(ctx, g, group, dlq, dl, req.ToTopic); err != nil {
				var missing *originGoneError
				if errors.As(err, &missing) {
					gone.add(dl)
					continue
				}
				return sent, gone.along(err)
			}
			sent++
		}
	}
	return sent, gone.err()
}

// endRedrive lets the next redrive run: at once, or, when this one
// returned with a write still on its way (left: its context ended while
// the engine wrote a dead letter's copy and mark), once the writer is done
// with it, so that the next one finds the mark it writes and does not send
// that dead letter a second time.
func (e *Engine) endRedrive(left <-chan struct{}) {
	if left == nil {
		<-e.redriving
		return
	}
	go func() {
		select {
		case <-left:
		case <-e.writerDone:
		}
		<-e.redriving
	}()
}

// namedLostMark reports whether a redrive sends back a dead letter listed
// redriven, at off of group's dead-letter topic: only one named on its own
// (explicit) whose redriven mark is lost.
func (e *Engine) namedLostMark(explicit bool, group string, off int64) (bool, error) {
	if !explicit {
		return false, nil
	}
	return e.redrivenMarkLost(group, off)
}

// originGoneError is a redrive's dead letter whose original topic is gone
// (deleted, not made again): it wraps an error matching ErrTopicNotFound.
type originGoneError struct{ err error }

func (o *originGoneError) Error() string { return o.err.Error() }
func (o *originGoneError) Unwrap() error { return o.err }

// goneTopics collects the dead letters a redrive left because their
// topics are gone: the redrive goes on past them, sending back what
// it can, and then names them in an error matching ErrTopicNotFound. It
// keeps the first goneShown offsets and topics, and counts the rest, so a
// dead-letter topic of millions costs it no more than that.
type goneTopics struct {
	count      int
	offsets    []int64
	topics     map[string]struct{}
	moreTopics bool // a topic past the first goneShown was left too
}

// goneShown is how many offsets and topics a redrive's error names.
const goneShown = 16

func (g *goneTopics) add(dl DLQEntry) {
	g.count++
	if len(g.offsets) < goneShown {
		g.offsets = append(g.offsets, dl.Offset)
	}
	if g.topics == nil {
		g.topics = make(map[string]struct{})
	}
	if _, ok := g.topics[dl.Message.Topic]; !ok {
		if len(g.topics) < goneShown {
			g.topics[dl.Message.Topic] = struct{}{}
		} else {
			g.moreTopics = true
		}
	}
}

// err is nil when no dead letter was left.
func (g *goneTopics) err() error {
	if g.count == 0 {
		return nil
	}
	more := ""
	if g.count > len(g.offsets) {
		more = fmt.Sprintf(" and %d more", g.count-len(g.offsets))
	}
	topics, which := slices.Sorted(maps.Keys(g.topics)), "their topics"
	if g.moreTopics {
		which = "their topics, among others,"
	}
	return fmt.Errorf("%w: %d dead letters left (offsets %v%s): %s %q are gone; make them again and redrive, or leave the dead letters", ErrTopicNotFound, g.count, g.offsets, more, which, topics)
}

// along joins err, which stopped the redrive, to the dead letters left
// before it.
func (g *goneTopics) along(err error) error {
	if left := g.err(); left != nil {
		return errors.Join(err, left)
	}
	return err
}

// redriveOne sends dl, a dead letter of dlq, group's dead-letter topic,
// back: to group's retry topic, or with toTopic to its original topic. g
// is the group as the redrive found it (nil: one the engine did not know).
// left is set when ctx ended while the engine wrote dl's copy and mark:
// closed once the writer is done with them.
func (e *Engine) redriveOne(ctx context.Context, g *group, group string, dlq *topic, dl DLQEntry, toTopic bool) (left <-chan struct{}, err error) {
	if h := e.redriveHook.Load(); h != nil {
		(*h)(group)
	}
	var req *AppendRequest
	wctx := allowInternal(storedAgain(ctx), RetryTopic(group))
	if toTopic {
		req, err = e.topicCopy(ctx, dl)
		wctx = storedAgain(ctx)
	} else {
		req, err = e.retryCopy(group, dl)
	}
	if err != nil {
		return nil, err
	}
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer e.leave()
	// Until the copy and its mark are queued, hold off the group's
	// deletion as a SendBack does (its name's gate and, for a group the
	// engine holds, group.sbGate; groupdelete_gate.go): it would miss
	// them, and the copy would make the deleted group's retry topic again,
	// for a group made later under the name to consume. Once they are
	// queued, the deletion's barrier waits for their write
	// (fenceSendBacks, fenceGroupName), also when this call gives up on
	// ctx before it is done. A group deleted already gets nothing: the
	// append below would make that topic.
	release, err := e.holdOffDeletion(ctx, g, group, dlq)
	if err != nil {
		return nil, err
	}
	defer release()
	if h := e.redriveHeldHook.Load(); h != nil {
		(*h)(group)
	}
	c, _, err := e.prepareAppend(wctx, req)
	if err != nil {
		return nil, err
	}
	// The copy is sent again on purpose: it bypasses the topic's dedup window
	// (ToTopic to a dedup topic: it becomes the ID's entry there), and its
	// redriven mark is written in the same batch.
	c.dedupBypass = true
	c.meta = append(c.meta, store.MetaOp{Key: redrivenKey(group, dl.Offset), Value: redrivenValue(dlq.id)})
	c.seal(e.limits)
	if left, err := e.submitLeft(ctx, c); err != nil {
		return left, fmt.Errorf("equeue: redrive dead letter %d: %w", dl.Offset, err)
	}
	// A lost mark written over is sound again: should it be lost once
	// more, that is counted and logged anew (but not by a read from before
	// this write).
	e.rewroteRedriven(redrivenKey(group, dl.Offset))
	return nil, nil
}

// retryCopy is the append of dl to group's retry topic, due at once: a
// fresh retry (its attempts count from 0 again) carrying dl's origin, so
// that the group's handler sees the message as before (origin, retry.go),
// as SendBack builds a retry's copy. The copy is of the topic that has
// the origin's name now (SysOriginTopicID): a redrive sends a dead letter
// of a topic deleted and made again to the new one, as ToTopic does. With
// none of the name, the group's pull would skip the copy
// (retryorigin.go) while the redriven mark says it went back: dl is left,
// with an originGoneError.
func (e *Engine) retryCopy(group string, dl DLQEntry) (*AppendRequest, error) {
	origin, ok := e.lookupTopic(dl.Message.Topic)
	if !ok || origin.deleted.Load() {
		return nil, &originGoneError{fmt.Errorf("%w: redrive dead letter %d: topic %q", ErrTopicNotFound, dl.Offset, dl.Message.Topic)}
	}
	d := derived(dl.Message, RetryTopic(group), 0, nil)
	if _, ok := d.sys[SysOriginPriority]; !ok && origin.laneCount() > 1 {
		// The lane dl is listed with, which the origin topic's ID stamped
		// next would no longer let originPriority work out (a copy made
		// before copies recorded either).
		d.sys[SysOriginPriority] = strconv.Itoa(dl.Message.Priority)
	}
	d.sys[SysOriginTopicID] = strconv.FormatUint(uint64(origin.id), 10)
	return &AppendRequest{Topic: d.Topic, Queue: 0, Messages: []*Message{d}}, nil
}

// topicCopy is the append of dl to its original topic, as a fresh message:
// to its queue, or when that is gone or closed, to the one its key routes
// to. The copy keeps dl's system properties but its retry origin and last
// error: a request keeps its reply address, so that its handler can still
// answer it (Reply).
func (e *Engine) topicCopy(ctx context.Context, dl DLQEntry) (*AppendRequest, error) {
	v := dl.Message
	fresh := withoutRetryOrigin(&Message{ID: v.ID, Topic: v.Topic, Tag: v.Tag, Keys: v.Keys, Properties: v.Properties, Body: v.Body, BornAt: v.BornAt, ExpiresAt: v.ExpiresAt, sys: v.sys})
	route, err := e.Route(ctx, v.Topic)
	if err != nil {
		err = fmt.Errorf("equeue: redrive dead letter %d: %w", dl.Offset, err)
		if errors.Is(err, ErrTopicNotFound) {
			return nil, &originGoneError{err}
		}
		return nil, err
	}
	if len(route.Writable) == 0 {
		return nil, fmt.Errorf("%w: topic %q has no writable queue", ErrQueueNotWritable, v.Topic)
	}
	// To the lane of its priority (priority.go), which its old queue ID
	// may no longer be in: the topic may have been made again with
	// another lane count.
	n := max(route.Priorities, 1)
	lane, queue := laneOf(originPriority(v, n), n), v.Queue
	if queue%n != lane || !slices.Contains(route.Writable, queue) {
		queue = route.reroute(fresh, lane)
	}
	return &AppendRequest{Topic: v.Topic, Queue: queue, Messages: []*Message{fresh}}, nil
}

// checkRetryConsumed checks that the members of g, group's group (nil
// when the engine does not know it), consume its retry topic, so that a
// redrive can send its dead letters there: a broadcasting group's members
// retry locally, orderly consumers retry in place and PullConsumers read
// only their topics, and of a group the engine does not know (its
// metadata deleted) nothing says who reads it.
func checkRetryConsumed(group string, g *group) error {
	const how = "redrive with ToTopic to send them back to their topics, where every subscribed group gets them again"
	if g == nil {
		return fmt.Errorf("%w: %w: %q: whether its members consume its retry topic is unknown: %s", ErrInvalidArgument, ErrGroupNotFound, group, how)
	}
	g.mu.Lock()
	model, consumed := g.model, slices.ContainsFunc(g.subs, func(s Subscription) bool { return s.Topic == RetryTopic(group) })
	g.mu.Unlock()
	switch {
	case model == Broadcasting:
		return fmt.Errorf("%w: broadcasting group %q has no retry topic (its members retry locally): %s", ErrInvalidArgument, group, how)
	case !consumed:
		return fmt.Errorf("%w: group %q does not consume its retry topic (orderly and pull consumers do not): %s", ErrInvalidArgument, group, how)
	}
	return nil
}

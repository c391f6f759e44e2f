package equeue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/equeue-go/equeue/store"
)

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// offsetValue encodes a committed offset and the attempts of unfinished
// messages at or above it: the offset (8 bytes), then per message its offset
// (8 bytes) and attempts (4 bytes), or attemptsDoneBit for a message done
// (MessageAttempts.Done; attempts never reach that bit). Without attempts
// the value is the 8 bytes of the first releases.
func offsetValue(v int64, atts []MessageAttempts) []byte {
	b := make([]byte, 0, 8+12*len(atts))
	b = binary.BigEndian.AppendUint64(b, uint64(v))
	for _, a := range atts {
		n := uint32(a.Attempts)
		if a.Done {
			n = attemptsDoneBit
		}
		b = binary.BigEndian.AppendUint64(b, uint64(a.Offset))
		b = binary.BigEndian.AppendUint32(b, n)
	}
	return b
}

// attemptsDoneBit marks a done message in an offsetValue's attempts.
const attemptsDoneBit = 1 << 31

// parseOffsetValue decodes an offsetValue; false when it is malformed.
func parseOffsetValue(v []byte) (int64, []MessageAttempts, bool) {
	if len(v) < 8 || (len(v)-8)%12 != 0 {
		return 0, nil, false
	}
	off := int64(beUint64(v))
	var atts []MessageAttempts
	for rest := v[8:]; len(rest) > 0; rest = rest[12:] {
		a := MessageAttempts{Offset: int64(beUint64(rest)), Attempts: int(binary.BigEndian.Uint32(rest[8:]))}
		if a.Attempts&attemptsDoneBit != 0 {
			a.Attempts, a.Done = 0, true
		}
		atts = append(atts, a)
	}
	return off, atts, true
}

// checkAttempts reports ErrInvalidArgument unless oc's attempts are at most
// MaxCommitAttempts entries at or above its offset, in ascending offset
// order, each positive or done (and then above the offset).
func checkAttempts(oc OffsetCommit) error {
	if len(oc.Attempts) > MaxCommitAttempts {
		return fmt.Errorf("%w: %d attempt entries for %s (most %d)", ErrInvalidArgument, len(oc.Attempts), oc.QueueRef, MaxCommitAttempts)
	}
	prev := oc.Offset - 1
	for _, a := range oc.Attempts {
		if a.Offset <= prev || (a.Done && a.Offset == oc.Offset) || (!a.Done && a.Attempts <= 0) || a.Attempts < 0 || a.Attempts >= attemptsDoneBit {
			return fmt.Errorf("%w: attempts %+v for %s at offset %d", ErrInvalidArgument, a, oc.QueueRef, oc.Offset)
		}
		prev = a.Offset
	}
	return nil
}

// offsetKeyFor is the committed-offset key of a member for q: per member in
// broadcasting groups, shared in clustering groups.
func (g *group) offsetKeyFor(memberID string, q QueueRef) offsetKey {
	if g.model == Broadcasting {
		return offsetKey{member: memberID, q: q}
	}
	return offsetKey{q: q}
}

// ofModel reports whether k is an offset key of g's current model: a
// member's own in a broadcasting group, the shared one in a clustering
// group. A group whose first member after an empty spell joined with the
// other model keeps the former model's offsets, but no member reads them:
// they must not hold retention back or show as the group's progress.
// g.mu must be held.
func (g *group) ofModel(k offsetKey) bool { return (k.member != "") == (g.model == Broadcasting) }

// CommitOffsets stores the next offset to consume of queues the member owns.
// Offsets of queues it does not own under the given epoch, or of a topic
// that was deleted, are refused with ErrFenced, and negative offsets and
// offsets past their queue's end with ErrInvalidArgument; the others are
// stored. An offset below the queue's first (one retention passed) is
// stored: a pull from it starts at the first. The engine's view changes
// only after the store write returned. A nil request or a member ID
// JoinGroup would refuse gets ErrInvalidArgument and a bad group name
// ErrInvalidName, whether or not the group exists; then an unknown group gets ErrGroupNotFound and a member not in
// it ErrNotMember, as does a commit naming an incarnation other than the
// live member's (CommitRequest.Incarnation), which stores nothing.
//
// Broker seam: Consumers commit through it (PullConsumer.Commit for
// programs that run their own loop); to move a group's offsets as an
// operator, use ResetOffsets.
func (e *Engine) CommitOffsets(ctx context.Context, req *CommitRequest) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if req == nil {
		return fmt.Errorf("%w: nil commit request", ErrInvalidArgument)
	}
	if err := ValidateName(req.Group); err != nil { // whether or not the group exists
		return err
	}
	if err := validateMemberID(req.Member); err != nil { // whether or not the group exists
		return err
	}
	g, err := e.groups.memberGroup(req.Group, req.Member)
	if err != nil {
		return err
	}
	// Another incarnation's commit is refused before it fences anything:
	// it would hold up the live one's send-backs for a commit that stores
	// nothing, and end with its context's error while one is on its way
	// (checked again under the commit's locks: commitincarnation.go).
	if err := g.sameIncarnation(req); err != nil {
		g.mu.Unlock()
		return err
	}
	// A commit that moves an offset back deletes every mark of its queue
	// (sendbackmark.go): like a reset, it first fences the group's
	// send-backs in progress, so that none leaves a mark behind it.
	fenced := g.movesBack(req)
	g.mu.Unlock()
	for {
		if fenced {
			if err := e.fenceSendBacks(ctx, g); err != nil {
				return fmt.Errorf("equeue: commit offsets of %q: %w", req.Group, err)
			}
		}
		again, err := e.commitOffsets(g, req, fenced)
		if fenced {
			g.sbGate.unlock(false)
		}
		if !again {
			return err
		}
		fenced = true // an offset moved on since movesBack looked
	}
}

// movesBack reports whether req moves one of g's committed offsets back
// under a grant the member holds (a commit refused as fenced does not
// hold up the group's send-backs). g.mu must be held.
func (g *group) movesBack(req *CommitRequest) bool {
	for _, oc := range req.Offsets {
		if g.checkGrant(req.Member, oc.Grant) != nil {
			continue
		}
		if cur, ok := g.offsets[g.offsetKeyFor(req.Member, oc.QueueRef)]; ok && oc.Offset < cur {
			return true
		}
	}
	return false
}

// commitOffsets is CommitOffsets once g's send-backs are fenced when
// fenced is set; when it is not and the commit moves an offset back, it
// stores nothing and reports again.
func (e *Engine) commitOffsets(g *group, req *CommitRequest, fenced bool) (again bool, err error) {
	gate := e.gateTopics(topicsOfCommits(req.Offsets))
	defer gate.release()
	g.commitMu.Lock()
	g.mu.Lock()
	if err := e.groups.stillMember(g, req.Member); err != nil {
		g.mu.Unlock()
		g.commitMu.Unlock()
		return false, err
	}
	if err := g.sameIncarnation(req); err != nil {
		g.mu.Unlock()
		g.commitMu.Unlock()
		return false, err
	}
	var (
		passes []markPass
		offs   []store.MetaOp // the offsets, after the marks' deletions
		atts   [][]MessageAttempts
		errs   []error
	)
	for _, oc := range req.Offsets {
		if err := gate.check(oc.Topic); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := g.checkGrant(req.Member, oc.Grant); err != nil {
			errs = append(errs, err)
			continue
		}
		if oc.Offset < 0 {
			errs = append(errs, fmt.Errorf("%w: negative offset %d for %s", ErrInvalidArgument, oc.Offset, oc.QueueRef))
			continue
		}
		if err := checkAttempts(oc); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := e.checkCommitEnd(oc.QueueRef, oc.Offset); err != nil {
			errs = append(errs, err)
			continue
		}
		k := g.offsetKeyFor(req.Member, oc.QueueRef)
		// The send-back marks the commit passes: some go in its write, the
		// rest after it (sendbackmark.go).
		passed := g.marksPassed(k, oc.Offset)
		if cur, ok := g.offsets[k]; ok && cur == oc.Offset && slices.Equal(g.attempts[k], oc.Attempts) && len(passed) == 0 {
			continue
		}
		cur, had := g.offsets[k]
		back := had && oc.Offset < cur
		if back && !fenced {
			g.mu.Unlock()
			g.commitMu.Unlock()
			return true, nil
		}
		passes = append(passes, markPass{k: k, off: oc.Offset, passed: passed, back: back})
		atts = append(atts, slices.Clone(oc.Attempts))
		offs = append(offs, store.MetaOp{Key: offsetMetaKey(g.name, k), Value: offsetValue(oc.Offset, atts[len(atts)-1])})
	}
	// The marks the commit passes: as many as fit in its write, the live
	// ones of an offset moved back first (planMarks).
	ops, set := g.planMarks(passes)
	ops = append(ops, offs...)
	for i := range set {
		set[i].atts = atts[i]
	}
	g.mu.Unlock()
	err = e.deleteMarksBeforeMovingBack(g, set)
	if err == nil {
		err = e.storeOffsets(g, ops, set)
	}
	g.commitMu.Unlock()
	if err != nil {
		errs = append(errs, fmt.Errorf("equeue: commit offsets of %q: %w", req.Group, err))
	} else {
		// The marks the commit's write had no room for: deleted without
		// holding up the group's next commit.
		e.deleteMarksAfter(g, set)
	}
	return false, errors.Join(errs...)
}

// queueEnd returns the end of ref's queue: the offset its next message gets.
func (e *Engine) queueEnd(ref QueueRef) (int64, error) {
	q, err := e.queueOf(ref)
	if err != nil {
		return 0, err
	}
	_, end, _ := q.bounds()
	return end, nil
}

// checkCommitEnd reports ErrInvalidArgument when off is past the end of
// ref's queue. Such an offset skips nothing yet: a member that starts from
// it is moved to the queue's end as it is then (PullOffsetMoved), past the
// messages sent since the commit, which the group would never get.
func (e *Engine) checkCommitEnd(ref QueueRef, off int64) error {
	end, err := e.queueEnd(ref)
	if err != nil {
		return err
	}
	if off > end {
		return fmt.Errorf("%w: offset %d for %s is past the queue's end %d", ErrInvalidArgument, off, ref, end)
	}
	return nil
}

// offsetSet is one committed offset to publish in a group's memory, with
// the offsets of the send-back marks it passes: marks deleted in its
// write, later those to delete after it (deleteMarksAfter).
type offsetSet struct {
	k            offsetKey
	off          int64
	atts         []MessageAttempts
	marks, later []int64
	back         bool // moves k's committed offset back: later go before the write
}

// deleteMarksBeforeMovingBack deletes, before the write that moves an
// offset back, the marks it passes that the write has no room for: they
// are live (at or above the new offset), so none may outlive the move.
func (e *Engine) deleteMarksBeforeMovingBack(g *group, set []offsetSet) error {
	for i := range set {
		if s := &set[i]; s.back && len(s.later) > 0 {
			if err := e.deleteMarks(g, s.k, s.later); err != nil {
				return err
			}
			s.later = nil
		}
	}
	return nil
}

// storeOffsets writes ops and then, if they reached the store (see
// storeMeta), sets the offsets in g's memory. g.commitMu must be held, g.mu
// must not.
func (e *Engine) storeOffsets(g *group, ops []store.MetaOp, set []offsetSet) error {
	if len(ops) == 0 {
		return nil
	}
	applied, err := e.storeMeta(ops...)
	if !applied {
		return err
	}
	g.mu.Lock()
	var lowered []string // topics of offsets stored first or moved back
	for _, s := range set {
		if prev, ok := g.offsets[s.k]; !ok || s.off < prev {
			lowered = append(lowered, s.k.q.Topic)
		}
		g.setOffset(s.k, s.off, s.atts)
		g.forgetMarks(s.k, s.marks)
	}
	if len(lowered) > 0 {
		// Before any member or caller reads the offsets: a retention pass
		// that worked out a floor without them must not move a watermark.
		e.groups.floors.add(g, lowered...)
	}
	g.mu.Unlock()
	return notDurable(err, "offsets of group %q", g.name)
}

// setOffset sets a committed offset and its attempts in memory. g.mu must be held.
func (g *group) setOffset(k offsetKey, off int64, atts []MessageAttempts) {
	g.offsets[k] = off
	delete(g.starts, k)
	if len(atts) > 0 {
		g.attempts[k] = atts
	} else {
		delete(g.attempts, k)
	}
}

func topicsOfCommits(ocs []OffsetCommit) []string {
	names := make([]string, 0, 1)
	for _, oc := range ocs {
		names = append(names, oc.Topic)
	}
	return names
}

func topicsOfGrants(gs []Grant) []string {
	names := make([]string, 0, 1)
	for _, g := range gs {
		names = append(names, g.Topic)
	}
	return names
}

// topicGate holds the offset gates of some topics (shared): while it is
// held none of them can be deleted, so an offset written under it never
// outlives its topic. Take it before any group lock but a group's
// send-back gate (group.sbGate), which comes first.
type topicGate struct {
	held []*topic // sorted by name
}

// gateTopics takes the gate of each named topic that exists.
func (e *Engine) gateTopics(names []string) *topicGate {
	slices.Sort(names)
	names = slices.Compact(names)
	g := &topicGate{}
	for _, n := range names {
		if t, ok := e.lookupTopic(n); ok {
			t.gate.RLock()
			if t.deleted.Load() {
				t.gate.RUnlock()
				continue
			}
			g.held = append(g.held, t)
		}
	}
	return g
}

// check reports ErrFenced (and ErrTopicNotFound) unless name is held live.
// The held topics are sorted by name (gateTopics), so a commit of many
// topics' queues checks each in log time, not by a scan of them all.
func (g *topicGate) check(name string) error {
	if _, ok := slices.BinarySearchFunc(g.held, name, func(t *topic, name string) int { return strings.Compare(t.name, name) }); ok {
		return nil
	}
	return fmt.Errorf("%w: %w: %q", ErrFenced, ErrTopicNotFound, name)
}

func (g *topicGate) release() {
	for _, t := range g.held {
		t.gate.RUnlock()
	}
	g.held = nil
}

// offsetKeysOf returns the store keys of every committed offset of topic,
// in the store and in memory.
func (c *coordinator) offsetKeysOf(topic string) ([][]byte, error) {
	var keys keySet
	err := c.e.st.ScanMeta(keyOffsetPrefix, func(k, _ []byte) error {
		if _, ok, good := parseOffsetMetaKey(k); good && ok.q.Topic == topic {
			keys.add(k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, g := range c.snapshot() {
		g.mu.Lock()
		for k := range g.offsets {
			if k.q.Topic == topic {
				keys.add(offsetMetaKey(g.name, k))
			}
		}
		g.mu.Unlock()
	}
	return keys.keys, nil
}

// startsOfAddedQueues returns the store operations that start every group
// consuming topic from the latest message, and consuming it already
// (holding an offset of one of its queues, or a start FetchOffsets
// resolved there but could not store yet; in a broadcasting group, each
// member doing so), at offset 0 of the queues
// [from, to) that AddQueues is adding, and the offsets to set in memory
// once they are stored. Without them a group consuming from the latest
// message would resolve its start in a new queue only when its member
// fetches it after the rebalance, past whatever was sent to the queue
// meanwhile, although the group owned the queue since it was added.
func (c *coordinator) startsOfAddedQueues(topic string, from, to int) ([]store.MetaOp, map[*group][]offsetSet) {
	var ops []store.MetaOp
	sets := map[*group][]offsetSet{}
	for _, g := range c.snapshot() {
		g.mu.Lock()
		subscribed := slices.ContainsFunc(g.subs, func(s Subscription) bool { return s.Topic == topic })
		if g.from != ConsumeFromLatest || !subscribed {
			// Other starts already take what the queue holds; a group
			// coordinated outside the engine (Kafka) has no
			// subscriptions, and its clients choose their own start.
			g.mu.Unlock()
			continue
		}
		members := map[string]bool{}
		for k := range g.offsets {
			if k.q.Topic == topic && g.ofModel(k) {
				members[k.member] = true
			}
		}
		for k := range g.starts { // a start resolved, not stored yet
			if k.q.Topic == topic && g.ofModel(k) {
				members[k.member] = true
			}
		}
		for id := range members {
			for q := from; q < to; q++ {
				k := offsetKey{member: id, q: QueueRef{Topic: topic, Queue: q}}
				ops = append(ops, store.MetaOp{Key: offsetMetaKey(g.name, k), Value: offsetValue(0, nil)})
				sets[g] = append(sets[g], offsetSet{k: k})
			}
		}
		g.mu.Unlock()
	}
	return ops, sets
}

// forgetOffsets drops topic's offsets from every group's memory, after
// they were deleted from the store.
func (c *coordinator) forgetOffsets(topic string) {
	for _, g := range c.snapshot() {
		g.mu.Lock()
		for k := range g.offsets {
			if k.q.Topic == topic {
				delete(g.offsets, k)
				delete(g.attempts, k)
			}
		}
		g.forgetStartsOf(topic)
		g.mu.Unlock()
	}
}

// snapshot lists the groups.
func (c *coordinator) snapshot() []*group {
	c.mu.Lock()
	defer c.mu.Unlock()
	gs := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	return gs
}

// FetchOffsets returns the committed state of each granted queue: the next
// offset to consume and the stored attempts of its unfinished messages. A
// queue the group has no offset for starts where the group's ConsumeFrom
// says, and that start is stored at once so a restart does not skip ahead
// (a start from a time is searched for in the store without holding up
// the group's commits; an offset committed meanwhile is answered instead).
// An offset stored past its queue's end (as releases before CommitOffsets
// refused one did) is answered as the end, where a pull from it would
// start, so that the member's commits from there are not refused.
//
// A member ID JoinGroup would refuse gets ErrInvalidArgument and a bad
// group name ErrInvalidName, whether or not the group exists; then an
// unknown group gets ErrGroupNotFound and a member not in it ErrNotMember.
//
// Broker seam: Consumers and PullConsumers call it when granted a
// queue; to read a group's offsets, use Group.
func (e *Engine) FetchOffsets(ctx context.Context, groupName, memberID string, queues []Grant) ([]OffsetCommit, error) {
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer e.leave()
	if err := ValidateName(groupName); err != nil { // whether or not the group exists
		return nil, err
	}
	if err := validateMemberID(memberID); err != nil { // whether or not the group exists
		return nil, err
	}
	gate := e.gateTopics(topicsOfGrants(queues))
	defer gate.release()
	g, err := e.groups.group(groupName)
	if err != nil {
		return nil, err
	}
	// The group's locks are taken once: a group's members fetch their
	// offsets at every handover, and a crowd of them took g.mu twice each.
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	if _, ok := g.members[memberID]; !ok {
		g.mu.Unlock()
		return nil, fmt.Errorf("%w: %q in group %q", ErrNotMember, memberID, groupName)
	}
	// Starts from a time are searched for in the store without the group's
	// locks: its other members' commits and pulls do not wait for those
	// reads. Whatever changed meanwhile is checked again under them.
	var search []timeStart
	for _, q := range queues {
		if g.checkGrant(memberID, q) != nil || g.startFrom(q.Topic) != ConsumeFromTimestamp {
			continue
		}
		if _, ok := g.offsets[g.offsetKeyFor(memberID, q.QueueRef)]; !ok {
			search = append(search, timeStart{ref: q.QueueRef, at: g.fromTime})
		}
	}
	var found timeStarts
	if len(search) > 0 {
		g.mu.Unlock()
		g.commitMu.Unlock()
		found = e.searchTimeStarts(search)
		g.commitMu.Lock()
		g.mu.Lock()
	}
	if err := e.groups.stillMember(g, memberID); err != nil {
		g.mu.Unlock()
		return nil, err
	}
	out := make([]OffsetCommit, len(queues))
	var (
		ops []store.MetaOp
		set []offsetSet
	)
	for i, q := range queues {
		if err := gate.check(q.Topic); err != nil {
			g.mu.Unlock()
			return nil, err
		}
		if err := g.checkGrant(memberID, q); err != nil {
			g.mu.Unlock()
			return nil, err
		}
		k := g.offsetKeyFor(memberID, q.QueueRef)
		out[i].Grant = q
		if off, ok := g.offsets[k]; ok {
			out[i].Offset = off
			out[i].Attempts = slices.Clone(g.attempts[k])
			if end, err := e.queueEnd(q.QueueRef); err == nil && off > end {
				out[i].Offset, out[i].Attempts = end, nil
			}
			continue
		}
		from := g.startFrom(q.Topic)
		off, ok := g.resolvedStart(k)
		if !ok && from == ConsumeFromTimestamp {
			off, ok = found.start(e, timeStart{ref: q.QueueRef, at: g.fromTime})
		}
		if !ok {
			off, err = e.fetchStart(g, q.QueueRef, from)
			if err != nil {
				g.mu.Unlock()
				return nil, err
			}
		}
		// Kept until the write below (or a later one) sets it: should
		// that write fail, the next fetch answers the same start.
		g.keepStart(k, off)
		out[i].Offset = off
		set = append(set, offsetSet{k: k, off: off})
		ops = append(ops, store.MetaOp{Key: offsetMetaKey(g.name, k), Value: offsetValue(off, nil)})
	}
	g.mu.Unlock()
	if err := e.storeOffsets(g, ops, set); err != nil {
		return nil, fmt.Errorf("equeue: store start offsets of %q: %w", groupName, err)
	}
	return out, nil
}

// fetchStart is startOffset for FetchOffsets, under g.mu. Only a start
// from a time reads the store (one the search before the group's locks
// did not find): listings and heartbeats read g frozen across those reads
// (groupfreeze.go). The other starts are the queue's bounds, read from
// memory: the group is not frozen for them.
func (e *Engine) fetchStart(g *group, ref QueueRef, from ConsumeFrom) (int64, error) {
	if from != ConsumeFromTimestamp {
		return e.startOffset(ref, from, g.fromTime)
	}
	g.freeze()
	defer g.thaw()
	return e.startOffset(ref, from, g.fromTime)
}

func (e *Engine) queueOf(ref QueueRef) (*queue, error) {
	t, ok := e.lookupTopic(ref.Topic)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrTopicNotFound, ref.Topic)
	}
	return t.queue(ref.Queue)
}

// startFrom is where g starts in a queue of topic it has no offset for:
// its ConsumeFrom, but its own retry topic always from the first copy.
// Every message there is one of g's failed messages waiting to be handled
// again, none older than the group, so starting at its end would drop
// them. The group holds an offset there from its first join, but not once
// an operator deleted the retry topic: the next send-back creates it again
// and stores its copy before the member fetches the start offset (as
// RocketMQ starts a retry topic at 0 whatever the group's setting).
func (g *group) startFrom(topic string) ConsumeFrom {
	if topic == RetryTopic(g.name) {
		return ConsumeFromEarliest
	}
	return g.from
}

// startOffset resolves where a group with no offset starts in q.
func (e *Engine) startOffset(ref QueueRef, from ConsumeFrom, at time.Time) (int64, error) {
	q, err := e.queueOf(ref)
	if err != nil {
		return 0, err
	}
	min, next, _ := q.bounds()
	switch from {
	case ConsumeFromDefault, ConsumeFromEarliest:
		return min, nil
	case ConsumeFromTimestamp:
		return e.offsetForTime(q, at)
	default: // ConsumeFromLatest
		return next, nil
	}
}

// offsetForTime returns the first offset of q stored at or after t (the
// queue's end when none is), by binary search over stored timestamps.
//
// A record whose time cannot be read, damaged or of a format version this
// build cannot read (a newer engine's), takes the time of the first
// readable record after it: the offset returned is past such a record only
// when a readable record after it was stored before t, and so (records are
// stored in offset order) was the record itself; with none, it is kept. So
// the search stays monotone whatever lies among the records: it never
// returns an offset past a readable record stored at or after t, and once
// the records after the damage are older than t it goes past it. The
// damaged records it reads are counted as a pull counts them.
func (e *Engine) offsetForTime(q *queue, t time.Time) (int64, error) {
	min, next, _ := q.bounds()
	var readErr error
	i := sort.Search(int(next-min), func(i int) bool {
		if readErr != nil {
			return true
		}
		at, ok, err := e.readableStoredAt(q, min+int64(i), next)
		if err != nil {
			readErr = err
			return true
		}
		return !ok || !at.Before(t)
	})
	if readErr != nil {
		return 0, readErr
	}
	return min + int64(i), nil
}

// timeScanBatch is how many records readableStoredAt reads at a time.
const timeScanBatch = 16

// readableStoredAt returns when the first record of q in [from, to) that
// this build can read was stored, skipping damaged records (counted, see
// noteCorrupt) and records of a newer format version; ok is false when
// there is none, or when the store refuses a segment of a newer format
// version (store.ErrUnsupportedFormat) before one: where that ends, and so
// what follows it, is unknown. Offsets it finds no record at are noted lost
// (queuelost.go).
func (e *Engine) readableStoredAt(q *queue, from, to int64) (at time.Time, ok bool, err error) {
	for from < to {
		recs, err := e.st.Read(q.key, uint64(from), uint64(to), timeScanBatch, 0)
		if errors.Is(err, store.ErrUnsupportedFormat) {
			return time.Time{}, false, nil
		}
		if err != nil {
			return time.Time{}, false, fmt.Errorf("equeue: read %s/%d at %d: %w", q.topic.name, q.id, from, err)
		}
		if len(recs) == 0 {
			q.noteLost(from, to)
			return time.Time{}, false, nil
		}
		if first := int64(recs[0].Offset); first > from {
			q.noteLost(from, first)
		}
		for _, r := range recs {
			m, err := decodeRecord(r.Value)
			switch {
			case err == nil:
				return m.StoredAt, true, nil
			case !errors.Is(err, ErrUnsupportedFormat): // not damage: a newer engine wrote it
				min, _, _ := q.bounds()
				e.noteCorrupt(q, int64(r.Offset), min, err)
			}
		}
		from = int64(recs[len(recs)-1].Offset) + 1
	}
	return time.Time{}, false, nil
}

// ResetTarget says where ResetOffsets moves a group.
type ResetTarget int

const (
	// ResetToEarliest moves every queue to its oldest stored message.
	ResetToEarliest ResetTarget = iota
	// ResetToLatest moves every queue to its end: pending messages are skipped.
	ResetToLatest
	// ResetToTime moves every queue to its first message stored at or after Time.
	ResetToTime
	// ResetToOffsets sets the explicit Offsets given; other queues keep theirs.
	ResetToOffsets
)

// ResetRequest describes an offset reset.
type ResetRequest struct {
	// To says where to move: ResetToEarliest, ResetToLatest, ResetToTime
	// or ResetToOffsets.
	To ResetTarget
	// Time is the target time for ResetToTime.
	Time time.Time
	// Offsets are the explicit offsets for ResetToOffsets; queues not
	// listed keep theirs.
	Offsets map[QueueRef]int64
}

// ResetOffsets moves a group's committed offsets (for every member of a
// broadcasting group). The change is stored, and live members are fenced off
// their current grants so they restart from the new offsets at once; each
// queue stays with the member holding it (under a new grant), so a queue
// being handed over goes to its next owner only once released. A
// reset to the earliest, the latest or a time moves the queues of the
// group's topics; for a group coordinated outside the engine, which has no
// subscriptions (CommitGroupOffsets), the queues it has offsets of.
//
// An unknown req.To, or a negative offset in req.Offsets (with
// ResetToOffsets), is refused with ErrInvalidArgument, and a bad group name
// with ErrInvalidName, whether or not the group exists; then an unknown group gets ErrGroupNotFound, a queue that
// does not exist ErrQueueNotFound (or ErrTopicNotFound), and an offset
// outside its queue's bounds ErrInvalidArgument.
func (e *Engine) ResetOffsets(ctx context.Context, groupName string, req ResetRequest) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if err := req.check(); err != nil { // whether or not the group exists
		return err
	}
	if err := ValidateName(groupName); err != nil { // whether or not the group exists
		return err
	}
	g, err := e.groups.group(groupName)
	if err != nil {
		return err
	}
	// A reset to a time searches every queue in the store: before the
	// group's locks (and its send-backs' gate) are taken, so that its
	// members' commits, pulls and send-backs do not wait for those reads.
	// A queue the group gained meanwhile is searched for under them.
	var found timeStarts
	if req.To == ResetToTime {
		g.mu.Lock()
		queues := e.groups.queuesOf(g)
		if len(queues) == 0 {
			queues = g.externalQueues()
		}
		search := make([]timeStart, 0, len(queues))
		for _, q := range queues {
			search = append(search, timeStart{ref: q, at: req.Time})
		}
		g.mu.Unlock()
		found = e.searchTimeStarts(search)
	}
	// No send-back of the group may leave a mark after the reset deleted
	// those of the queues it moves.
	if err := e.fenceSendBacks(ctx, g); err != nil {
		return fmt.Errorf("equeue: reset offsets of %q: %w", groupName, err)
	}
	defer g.sbGate.unlock(false)
	g.mu.Lock()
	names := make([]string, 0, len(g.subs)+len(req.Offsets))
	for _, s := range g.subs {
		names = append(names, s.Topic)
	}
	for _, q := range g.externalQueues() {
		names = append(names, q.Topic)
	}
	g.mu.Unlock()
	for ref := range req.Offsets {
		names = append(names, ref.Topic)
	}
	gate := e.gateTopics(names)
	defer gate.release()
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !e.groups.current(g) {
		// DeleteGroup deleted it while the reset waited: storing offsets
		// now would leave keys of a group the engine no longer has.
		return fmt.Errorf("%w: %q", ErrGroupNotFound, groupName)
	}
	g.queues = e.groups.queuesOf(g)
	queues := g.queues
	if len(queues) == 0 {
		queues = g.externalQueues()
	}
	// Listings and heartbeats read g frozen across the store's reads and
	// writes (groupfreeze.go): its memory changes once they are done (its
	// send-back marks, which neither reads, under g.sbMu meanwhile).
	g.freeze()
	frozen := true
	defer func() {
		if frozen {
			g.thaw()
		}
	}()
	targets := map[QueueRef]int64{}
	switch req.To {
	case ResetToEarliest, ResetToLatest, ResetToTime:
		from := map[ResetTarget]ConsumeFrom{ResetToEarliest: ConsumeFromEarliest, ResetToLatest: ConsumeFromLatest, ResetToTime: ConsumeFromTimestamp}[req.To]
		for _, q := range queues {
			off, ok := found.start(e, timeStart{ref: q, at: req.Time})
			if !ok {
				var err error
				if off, err = e.startOffset(q, from, req.Time); err != nil {
					return err
				}
			}
			if err := gate.check(q.Topic); err != nil {
				return err
			}
			targets[q] = off
		}
	case ResetToOffsets:
		for ref, off := range req.Offsets {
			q, err := e.queueOf(ref)
			if err != nil {
				return err
			}
			if err := gate.check(ref.Topic); err != nil {
				return err
			}
			min, next, _ := q.bounds()
			if off < min || off > next {
				return fmt.Errorf("%w: offset %d for %s outside [%d, %d]", ErrInvalidArgument, off, ref, min, next)
			}
			targets[ref] = off
		}
	default:
		return fmt.Errorf("%w: unknown reset target %d", ErrInvalidArgument, req.To)
	}
	var keys []offsetKey
	if g.model == Broadcasting {
		members := map[string]bool{}
		for k := range g.offsets {
			if g.ofModel(k) {
				members[k.member] = true
			}
		}
		for k := range g.starts { // a start kept, never stored (offset_resolvedstart.go)
			if g.ofModel(k) {
				members[k.member] = true
			}
		}
		for id := range g.members {
			members[id] = true
		}
		for id := range members {
			for q := range targets {
				keys = append(keys, offsetKey{member: id, q: q})
			}
		}
	} else {
		for q := range targets {
			keys = append(keys, offsetKey{q: q})
		}
	}
	// Every mark of a moved queue goes, as with a commit moving back: as
	// many as fit in the offsets' own write, the live ones first, the rest
	// in writes before it, so that a reset leaves no live mark, and one
	// the store refuses moves nothing and deletes only dead marks
	// (resetMarks).
	ops, set := g.resetMarks(keys, targets)
	for _, k := range keys {
		ops = append(ops, store.MetaOp{Key: offsetMetaKey(g.name, k), Value: offsetValue(targets[k.q], nil)})
	}
	if err := e.deleteMarksBeforeMovingBack(g, set); err != nil {
		return fmt.Errorf("equeue: reset offsets of %q: deleting send-back marks: %w", groupName, err)
	}
	applied, err := e.storeMeta(ops...)
	if !applied {
		return fmt.Errorf("equeue: reset offsets of %q: %w", groupName, err)
	}
	g.thaw()
	frozen = false
	for _, s := range set {
		g.setOffset(s.k, s.off, nil)
		g.forgetMarks(s.k, s.marks)
	}
	// Fence every current grant: owners must drop what they hold and refetch.
	e.groups.rebalanceFencing(g, true)
	e.log.Info("group offsets reset", "group", groupName, "queues", len(targets))
	return notDurable(err, "reset offsets of %q", groupName)
}

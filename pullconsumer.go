package equeue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// PullConsumerOptions configure a PullConsumer. Group and Subscriptions are
// required; zero fields mean the defaults of ConsumerOptions.
type PullConsumerOptions struct {
	// Group is the consumer group to join (required).
	Group string
	// ID identifies this member. Default: host-pid-random; broadcasting
	// members need a stable ID to resume from their own offsets.
	ID string
	// Model is Clustering (default) or Broadcasting.
	Model MessageModel
	// Subscriptions are the topics and tag filters to consume (required):
	// at most MaxSubscriptions, or NewPullConsumer refuses them with
	// ErrInvalidOptions.
	Subscriptions []Subscription
	// From says where a new group starts: ConsumeFromEarliest (default),
	// ConsumeFromLatest or ConsumeFromTimestamp with FromTime.
	From ConsumeFrom
	// FromTime is the start time for ConsumeFromTimestamp.
	FromTime time.Time
	// Strategy is the allocation strategy name; empty means "average".
	Strategy string
	// HeartbeatInterval is the longest gap between heartbeats; it must stay
	// well under the engine's session timeout. Zero means 3 s.
	HeartbeatInterval time.Duration
	// Logger receives the consumer's logs. Nil means silent.
	Logger *slog.Logger
}

// PullConsumer is a group member for users who run their own loop: it
// tracks which queues the group grants it, fetches batches on request and
// commits only when told to. When a queue is taken away (another member
// joined) it is released at once: progress not committed by then is
// delivered again to the next owner. Safe for concurrent use.
type PullConsumer struct {
	b    Broker
	join *JoinRequest
	hb   time.Duration
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// session tracks when the engine may expire the member (its
	// sessionEnds: closecut_keep.go); its lease is none.
	session memberGate

	mu      sync.Mutex
	started bool
	closed  bool
	// closeBound is the bound of Close's leave, set with closed: a Start
	// that joined while Close ran leaves within it too.
	closeBound func() (context.Context, context.CancelFunc)
	closeDone  chan struct{} // closed when the first Close returns
	closeErr   error         // the first Close's result, set before closeDone is closed
	// unfinished, set (before closeDone is closed) by a close whose bound
	// ended before its leave was answered, leaves again within another
	// bound: Engine.Close's, for a close of its user's.
	unfinished func(context.Context) error
	replaced   atomic.Bool // another incarnation holds the member ID
	version    int64
	grants     map[QueueRef]Grant
	positions  map[QueueRef]int64
	filters    map[string]string
	changed    chan struct{}
	// Priority lanes (priority_pull.go): lane counts of subscribed topics
	// with priorities, what gate checks read ahead of a lane, and a channel
	// closed when a read-ahead was taken.
	lanes   map[string]int
	ahead   map[QueueRef]readAhead
	drained chan struct{}
}

// NewPullConsumer returns a pull consumer on b; call Start to join. A nil
// b, or a nil pointer in it, is refused with ErrInvalidArgument.
func NewPullConsumer(b Broker, opts PullConsumerOptions) (*PullConsumer, error) {
	if nilBroker(b) {
		return nil, fmt.Errorf("%w: nil broker", ErrInvalidArgument)
	}
	co := ConsumerOptions{Group: opts.Group, ID: opts.ID, Model: opts.Model, Subscriptions: opts.Subscriptions,
		Handler: func(context.Context, *Message) error { return nil }, HeartbeatInterval: opts.HeartbeatInterval, Logger: opts.Logger}
	if err := co.validate(); err != nil {
		return nil, err
	}
	co.setDefaults()
	pc := &PullConsumer{
		b:    b,
		join: &JoinRequest{Group: co.Group, Member: co.ID, Model: co.Model, Subscriptions: co.Subscriptions, From: opts.From, FromTime: opts.FromTime, Strategy: opts.Strategy},
		hb:   co.HeartbeatInterval, log: co.Logger.With("group", co.Group, "member", co.ID),
		grants: map[QueueRef]Grant{}, positions: map[QueueRef]int64{}, filters: map[string]string{},
		ahead:   map[QueueRef]readAhead{},
		changed: make(chan struct{}), closeDone: make(chan struct{}),
	}
	for _, s := range co.Subscriptions {
		pc.filters[s.Topic] = s.Filter
	}
	pc.ctx, pc.cancel = context.WithCancel(context.Background())
	if e := trackerOf(b); e != nil {
		e.clients.addPullConsumer(pc) // Engine.Close closes it first
	}
	return pc, nil
}

// ID returns the member ID.
func (pc *PullConsumer) ID() string { return pc.join.Member }

// Start joins the group and returns once the queues granted at join time
// are assigned (their offsets fetched). Its heartbeats begin at once, as
// a Consumer's do, so fetching those offsets may outlast the engine's
// session timeout without the member being expired. Each PullConsumer is
// a new incarnation of the member ID, as a Consumer is. A Start whose
// join failed so that the broker may have taken it, its answer lost (a
// broken connection, ctx ended), leaves the group before it returns,
// bounded as the leave of a Start that does not complete (below), so that
// the join leaves no member behind; once that leave is answered the next
// Start joins as a new incarnation, else as the same one, so that a join
// whose answer was lost does not hold the member ID against it (should
// that leave have landed, its answer lost, the broker refuses that
// incarnation's join, ErrNotMember, and Start joins again at once as a
// new one; a refusal of its join otherwise, ErrJoinRefused, leaves all the
// same, as the member the lost join made may be there still); a Start called before that leave returned is refused (ErrClosed, as one called
// while Start runs), since it would join as the incarnation the leave
// removes. A Start that
// joined but could not use its grants (or whose ctx ended first) leaves
// the group, and the next Start joins as a new incarnation (the broker
// refuses a join of one that left). A release of queues the join's
// assignment takes away that fails does not fail Start: it holds its
// grants, and the release is tried again. The leave of a Start that does
// not complete is bounded by ctx, or by 10 s when ctx has no deadline or
// ended already; when
// Close came while Start ran, by the bound of Close's own leave (10 s for
// Close, the context of CloseContext).
func (pc *PullConsumer) Start(ctx context.Context) error {
	pc.mu.Lock()
	if pc.closed || pc.started {
		pc.mu.Unlock()
		return fmt.Errorf("%w: pull consumer closed or already started", ErrClosed)
	}
	pc.started = true
	// An incarnation carried over from a Start whose join may have landed
	// may be a member already (see joinMayHaveLanded).
	carried := pc.join.Incarnation != ""
	if !carried {
		pc.join.Incarnation = newIncarnation()
	}
	join := *pc.join
	pc.mu.Unlock()
	sent := time.Now()
	a, err := pc.b.JoinGroup(ctx, &join)
	if errors.Is(err, ErrNotMember) {
		// The broker took a leave of this incarnation (an earlier Start's
		// for a join whose answer was lost, its own answer lost too) and
		// refuses its joins for a session timeout: join as a new one.
		pc.mu.Lock()
		retry := !pc.closed // else Close left first, or reads pc.join
		if retry {
			pc.join.Incarnation = newIncarnation()
			join = *pc.join
			carried = false
		}
		pc.mu.Unlock()
		if retry {
			a, err = pc.b.JoinGroup(ctx, &join)
		}
	}
	if err != nil {
		pc.mu.Lock()
		if pc.closed {
			pc.started = false
			pc.mu.Unlock()
			// Close came while joining and left first: the broker refused
			// the join of the incarnation that left (ErrNotMember).
			return fmt.Errorf("%w: pull consumer closed while starting: %w", ErrClosed, err)
		}
		pc.mu.Unlock()
		// Still started while it leaves: a Start again now would join as
		// this incarnation, and this leave would remove its member.
		left := mayBeMember(err, carried) && leaveLostJoin(startLeaveBound(ctx), pc.b, pc.join, pc.log)
		pc.mu.Lock()
		pc.started = false      // not a member: Start may be called again
		if left && !pc.closed { // else Close may be reading pc.join
			pc.join.Incarnation = "" // the next Start joins as a new one
		}
		pc.mu.Unlock()
		return err
	}
	pc.mu.Lock()
	if pc.closed {
		// Close came while Start was joining, and found no member to
		// leave: leave now, within the bound of Close's own leave.
		bound := pc.closeBound
		pc.mu.Unlock()
		pc.leaveAfterStart(bound)
		return fmt.Errorf("%w: pull consumer closed while starting", ErrClosed)
	}
	pc.session.confirm(sent, a.SessionTimeout)
	// The join's grants are applied by the membership loop, which
	// heartbeats meanwhile; Start waits for that first apply.
	loopCtx, stopLoop := context.WithCancel(pc.ctx)
	first := newFirstApply(untilNotCancelled)
	ended := make(chan struct{})
	pc.wg.Add(1) // under mu, before Close's Wait
	pc.mu.Unlock()
	go func() {
		defer pc.wg.Done()
		defer close(ended)
		defer first.report(ErrClosed) // Close ended the loop before it applied anything
		defer stopLoop()
		pc.membershipLoop(loopCtx, &a, first)
	}()
	if err = first.wait(ctx); err == nil {
		return nil
	}
	// Joined, but its grants are not usable: stop the loop, leave, so its
	// queues do not wait for its session to expire, and let Start be
	// called again, as a new incarnation: the broker refuses a join of
	// one that left.
	stopLoop()
	<-ended
	pc.mu.Lock()
	bound := pc.closeBound
	pc.mu.Unlock()
	if bound == nil {
		bound = startLeaveBound(ctx)
	}
	pc.leaveAfterStart(bound)
	pc.mu.Lock()
	clear(pc.grants)
	clear(pc.positions)
	clear(pc.ahead)
	pc.started = false
	closed := pc.closed
	if !closed { // else Close may be reading pc.join
		pc.join.Incarnation = ""
	}
	pc.mu.Unlock()
	if closed && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: pull consumer closed while starting: %w", ErrClosed, err)
	}
	return err
}

// membershipLoop heartbeats and applies the member's assignments until
// ctx ends (runMembership), beginning with the join's; first is told the
// outcome of the first apply that was not cancelled.
func (pc *PullConsumer) membershipLoop(ctx context.Context, join *Assignment, first *firstApply) {
	apply := func(ctx context.Context, a Assignment) error {
		err := pc.apply(ctx, a)
		if errors.Is(err, errReleaseAgain) && ctx.Err() == nil {
			// Its grants are installed: Start holds them, while the
			// applier tries the release again.
			first.report(nil)
		}
		return err
	}
	runMembership(ctx, pc.b, pc.join, func() time.Duration { return pc.hb }, pc.log, pc.knownVersion, join,
		newApplier(ctx, first.wrap(apply), pc.log), func() { pc.apply(ctx, Assignment{}) }, pc.replaced.Store, pc.session.set) //nolint:errcheck // an empty assignment cannot fail
}

// knownVersion is the version of the assignment applied last.
func (pc *PullConsumer) knownVersion() int64 {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.version
}

// leaveAfterStart leaves the group for a Start that does not complete,
// within the context bound returns.
func (pc *PullConsumer) leaveAfterStart(bound func() (context.Context, context.CancelFunc)) {
	ctx, cancel := bound()
	defer cancel()
	if err := leaveGroup(ctx, pc.b, pc.join); notLeft(err) {
		pc.log.Warn("leave after a Start that did not complete", "group", pc.join.Group, "err", err)
	}
}

// errReleaseAgain is an apply's failed release of queues taken away: the
// grants it installed stand, and the applier tries it again.
var errReleaseAgain = errors.New("equeue: release of queues taken away failed")

func (pc *PullConsumer) apply(ctx context.Context, a Assignment) error {
	next := map[QueueRef]Grant{}
	for _, g := range a.Queues {
		next[g.QueueRef] = g
	}
	pc.mu.Lock()
	// dropped says whether a queue left the consumer: the Revoking of an
	// assignment applied again (a release tried again) changes nothing.
	dropped := false
	var revoked, fresh []Grant
	for ref, g := range pc.grants {
		if ng, ok := next[ref]; !ok || ng.Epoch != g.Epoch {
			revoked = append(revoked, g)
			dropped = true
			delete(pc.grants, ref)
			delete(pc.positions, ref)
			delete(pc.ahead, ref)
		}
	}
	for ref, g := range next {
		if _, ok := pc.grants[ref]; !ok {
			fresh = append(fresh, g)
		}
	}
	revoked = append(revoked, a.Revoking...)
	pc.mu.Unlock()
	// A release that failed leaves the queues granted to this member, and
	// the engine tells nothing new of them: the assignment is applied
	// again (the applier retries it), and releases its Revoking again.
	// The queues that left it unnamed are no longer this member's, and
	// those granted anew name a grant the engine holds no more.
	var released error
	if len(revoked) > 0 && a.Member != "" {
		if err := pc.b.ReleaseQueues(ctx, pc.join.Group, pc.join.Member, revoked); err != nil && !errors.Is(err, ErrNotMember) {
			released = fmt.Errorf("%w: %w", errReleaseAgain, err)
		}
	}
	var offs []OffsetCommit
	if len(fresh) > 0 {
		var err error
		if offs, err = pc.b.FetchOffsets(ctx, pc.join.Group, pc.join.Member, fresh); err != nil {
			if dropped {
				// The queues that left are gone from Assigned already:
				// tell it now, not once a fetch of the fresh ones works.
				pc.mu.Lock()
				close(pc.changed)
				pc.changed = make(chan struct{})
				pc.mu.Unlock()
			}
			return err
		}
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for i, g := range fresh {
		pc.grants[g.QueueRef] = g
		pc.positions[g.QueueRef] = offs[i].Offset
	}
	if released == nil {
		pc.version = a.Version
	}
	if a.Member != "" {
		pc.lanes = a.Priorities
	}
	if dropped || len(fresh) > 0 {
		close(pc.changed)
		pc.changed = make(chan struct{})
	}
	return released
}

// Assigned returns the queues the consumer owns now, sorted.
func (pc *PullConsumer) Assigned() []QueueRef {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	out := make([]QueueRef, 0, len(pc.grants))
	for ref := range pc.grants {
		out = append(out, ref)
	}
	sortRefs(out)
	return out
}

// Changed returns a channel closed at the next assignment change.
func (pc *PullConsumer) Changed() <-chan struct{} {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.changed
}

// Fetch returns up to max messages of an owned queue from the consumer's
// position (initially the group's committed offset) and moves the position
// past them, waiting up to wait for new ones: no longer than the engine's
// Options.MaxPullWait, in process and over remote (a longer wait returns
// nothing, and no error, once the cap passed). It returns ErrFenced for a
// queue the consumer does not own, also when the queue was taken away (or
// granted anew, by a reset) while the Fetch ran: the messages it read are
// the next grant's and are not returned. A Fetch that ends after Close
// returns ErrClosed. A nil ctx, a max outside 0..MaxPullBatch (0 means
// DefaultPullBatch) or a negative wait gets ErrInvalidArgument, whether or
// not the consumer owns q.
//
// On a topic with priorities each queue ID is a lane (see
// TopicOptions.Priorities) and the consumer owns every lane of a queue:
// a lane looks empty while a higher lane of the same queue has messages
// past the consumer's position, so a loop that fetches every assigned lane
// gets a backlog highest priority first. A Fetch checks the higher lanes
// again once it has read its lane's messages, whether its pull waited or
// answered at once: should a higher lane have received messages since its
// first check, it keeps them for its lane and waits, for what is left of
// its wait, until the higher lanes were fetched (with no wait it returns
// nothing). So a higher-lane message stored before a lower lane's
// messages were read is returned first. Fetched messages carry their
// lane's Priority.
//
// Fetches of one queue (a lane too) may run at once: each message is
// returned by one of them (the one that finishes later returns only what
// lies past the other's messages, maybe nothing), also when a check of a
// lower lane read the lane ahead meanwhile.
func (pc *PullConsumer) Fetch(ctx context.Context, q QueueRef, max int, wait time.Duration) ([]*Message, error) {
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		return nil, ErrClosed
	}
	if err := checkFetchArgs(ctx, max, wait); err != nil { // owned queue or not
		pc.mu.Unlock()
		return nil, err
	}
	_, ok := pc.grants[q]
	if !ok {
		pc.mu.Unlock()
		return nil, fmt.Errorf("%w: %s is not assigned to this consumer", ErrFenced, q)
	}
	at, lanes := pc.lanesOf(q)
	pc.mu.Unlock()
	start, total := time.Now(), wait
	if lanes {
		if turn, err := pc.laneTurn(ctx, q, at, max, wait); !turn || err != nil {
			return nil, err
		}
		wait = max0(total - time.Since(start)) // what the gate left of it
	}
	pc.mu.Lock()
	g, ok := pc.grants[q]
	pos := pc.positions[q]
	if msgs := pc.takeRead(q, max); ok && msgs != nil {
		if lanes {
			// A check of a lower lane may have read them after this
			// Fetch's gate: they are checked as a pull's are.
			return pc.laneRecheck(ctx, q, at, max, msgs, max0(total-time.Since(start)))
		}
		pc.mu.Unlock()
		return msgs, nil
	}
	pc.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s is not assigned to this consumer", ErrFenced, q)
	}
	res, err := pc.b.Pull(ctx, &PullRequest{Topic: q.Topic, Queue: q.Queue, Offset: pos, Max: max, Filter: pc.filters[q.Topic],
		Wait: wait, Group: pc.join.Group, Member: pc.join.Member, Epoch: g.Epoch})
	if err != nil {
		return nil, err
	}
	pc.mu.Lock()
	if err := pc.stillHeldLocked(g); err != nil {
		// The queue was taken away (or granted anew, or the consumer
		// closed) while the pull ran: its messages are the next grant's.
		pc.mu.Unlock()
		return nil, err
	}
	switch now := pc.positions[q]; {
	case now == pos:
		pc.positions[q] = res.NextOffset
		// A gate check of a lower lane may have read q from pos too while
		// this pull ran, and kept what it read for q's next Fetch: those
		// are the messages returned now, so they go, or they would be
		// returned again (and the position moved back to them).
		if _, ok := pc.ahead[q]; ok {
			delete(pc.ahead, q)
			pc.laneDrainedLocked()
		}
	case now > pos:
		// Another Fetch of q that read from pos at the same time (or a
		// Seek forward) moved the position on: the messages before it
		// are that Fetch's, and only those past it are this one's.
		res.Messages = messagesFrom(res.Messages, now)
		if res.NextOffset > now {
			pc.positions[q] = res.NextOffset
			// What a gate check read ahead of q from now on (or what
			// that other Fetch left of a read-ahead it took part of)
			// starts with the messages returned now: it goes, or they
			// would be returned again. What it held past them is read
			// again from the new position.
			if _, ok := pc.ahead[q]; ok {
				delete(pc.ahead, q)
				pc.laneDrainedLocked()
			}
		}
	}
	if lanes {
		markLane(res.Messages, at.lane)
		if len(res.Messages) > 0 {
			return pc.laneRecheck(ctx, q, at, max, res.Messages, max0(total-time.Since(start)))
		}
	}
	pc.mu.Unlock()
	return res.Messages, nil
}

// stillHeldLocked reports ErrClosed once the consumer closed and ErrFenced
// unless it still holds g's queue under g's epoch. pc.mu must be held.
func (pc *PullConsumer) stillHeldLocked(g Grant) error {
	if pc.closed {
		return ErrClosed
	}
	if cur, ok := pc.grants[g.QueueRef]; !ok || cur.Epoch != g.Epoch {
		return fmt.Errorf("%w: %s was taken away or granted anew while it was fetched", ErrFenced, g.QueueRef)
	}
	return nil
}

// messagesFrom returns the messages of msgs (ascending offsets) from offset
// from on.
func messagesFrom(msgs []*Message, from int64) []*Message {
	for i, m := range msgs {
		if m.Offset >= from {
			return msgs[i:]
		}
	}
	return nil
}

// Commit stores offset as the next offset the group consumes from q. An
// offset past the consumer's position (Position) is refused with
// ErrFenced: nothing fetched from the current grant's position reached
// it, so it is progress made under an earlier grant of the queue (or
// before a Seek back). Commit names no epoch, so without that check a Fetch's late
// commit, after ResetOffsets (or a rebalance that gave the queue back)
// granted the queue anew, would be stored under the new grant and skip
// the messages the group is to handle from the new grant's start.
// To skip messages, Seek past them first, then Commit. An offset past the
// queue's end is refused with ErrInvalidArgument (a Fetch after a Seek
// past the end moves the position to the end). After Close it returns
// ErrClosed. A nil ctx or a negative offset gets ErrInvalidArgument,
// whether or not the consumer owns q.
func (pc *PullConsumer) Commit(ctx context.Context, q QueueRef, offset int64) error {
	pc.mu.Lock()
	closed := pc.closed
	g, ok := pc.grants[q]
	pos := pc.positions[q]
	inc := pc.join.Incarnation
	pc.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := checkCommitArgs(ctx, q, offset); err != nil { // owned queue or not
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s is not assigned to this consumer", ErrFenced, q)
	}
	if offset > pos {
		return fmt.Errorf("%w: %s offset %d is past the consumer's position %d under its grant", ErrFenced, q, offset, pos)
	}
	return pc.b.CommitOffsets(ctx, &CommitRequest{Group: pc.join.Group, Member: pc.join.Member, Incarnation: inc,
		Offsets: []OffsetCommit{{Grant: g, Offset: offset}}})
}

// Position returns the consumer's position in an owned queue: where the
// next Fetch starts. After a fetch that found only messages the filter
// rejects, the position has moved past them; commit it to keep the group's
// lag honest.
func (pc *PullConsumer) Position(q QueueRef) (int64, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	off, ok := pc.positions[q]
	return off, ok
}

// Seek moves the consumer's position in an owned queue; the next Fetch
// moves a position past the queue's end (or below its first offset) to
// the end (the first). After Close it returns ErrClosed.
func (pc *PullConsumer) Seek(q QueueRef, offset int64) error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return ErrClosed
	}
	if _, ok := pc.grants[q]; !ok {
		return fmt.Errorf("%w: %s is not assigned to this consumer", ErrFenced, q)
	}
	pc.positions[q] = offset
	if _, ok := pc.ahead[q]; ok {
		delete(pc.ahead, q)
		pc.laneDrainedLocked()
	}
	return nil
}

// closeLeaveTimeout bounds how long Close waits for the broker to answer
// its leave (and a Consumer's Close its final commit too), and how long a
// Start whose ctx ended before its grants were applied waits for its
// leave's answer.
const closeLeaveTimeout = 10 * time.Second

// startLeaveBound is the bound of the leave (and a Consumer's final
// commit) of a Start that does not complete, taken when the leave
// begins: Start's ctx; closeLeaveTimeout when that ctx has ended by
// then, or has no deadline (a context.Background Start would otherwise
// wait on a silent remote connection until its keepalive gives up).
func startLeaveBound(ctx context.Context) func() (context.Context, context.CancelFunc) {
	return func() (context.Context, context.CancelFunc) {
		if ctx.Err() != nil {
			return closeLeaveBound()
		}
		if _, ok := ctx.Deadline(); !ok {
			return context.WithTimeout(ctx, closeLeaveTimeout)
		}
		return ctx, func() {}
	}
}

// Close leaves the group without committing. Idempotent. Engine.Close
// closes the pull consumers opened on it in-process first. It waits up to
// 10 s for the broker to answer the leave (a remote broker whose
// connection went silent may never answer it); CloseContext takes that
// bound from a context instead.
func (pc *PullConsumer) Close() error {
	return pc.close(closeLeaveBound)
}

// CloseContext is Close that waits for the broker to answer its leave
// only until ctx ends, instead of up to 10 s. The consumer is closed
// whether the leave is answered or not: its heartbeats end before it
// returns (no goroutine of its own is left), and Fetch, Commit and Seek
// return ErrClosed. When ctx ends first, it returns an error matching
// ctx's error, and the member stays in the group until the engine's
// session timeout expires it and hands its queues to the other members,
// unless Engine.Close, closing the pull consumer beside it (opened on the
// engine in-process; also when this close returned before Engine.Close
// began, while the member's session runs), leaves again within its own bound (it reports only what fails
// there). With a ctx that never ends (context.Background) it
// waits for the leave's answer as long as the broker takes. Idempotent,
// as Close: a later call of either waits for the first to finish and
// returns nil. A nil ctx returns ErrInvalidArgument
// and closes nothing.
func (pc *PullConsumer) CloseContext(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	return pc.close(func() (context.Context, context.CancelFunc) { return ctx, func() {} })
}

// closeForEngine is Close for Engine.Close: when the pull consumer is
// closing already (its user's Close or CloseContext), it waits for that
// close and returns its result. A close of its user's whose own bound
// (CloseContext's context) ended before its leave was answered returned
// that to its user; Engine.Close leaves again within its own bound (10 s)
// and reports only what it could not do itself.
func (pc *PullConsumer) closeForEngine() error {
	err := pc.closeReporting(closeLeaveBound, true)
	pc.mu.Lock()
	redo := pc.unfinished
	pc.unfinished = nil
	pc.mu.Unlock()
	if redo == nil {
		return err
	}
	if e := trackerOf(pc.b); e != nil {
		defer e.clients.removePullConsumer(pc) // kept for this redo alone
	}
	if sessionLapsed(pc.session.sessionEnds()) {
		return err // the member may be gone, its ID another's (closecut_keep.go)
	}
	ctx, cancel := closeLeaveBound()
	defer cancel()
	return redo(ctx)
}

// close closes the consumer and leaves the group within the context
// bound returns, called once the consumer's own goroutines ended. A later
// call waits for the first and returns nil.
func (pc *PullConsumer) close(bound func() (context.Context, context.CancelFunc)) error {
	return pc.closeReporting(bound, false)
}

// closeReporting is close; a later call waits for the first and returns
// nil, or the first one's result when again is set.
func (pc *PullConsumer) closeReporting(bound func() (context.Context, context.CancelFunc), again bool) (err error) {
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		<-pc.closeDone
		if again {
			return pc.closeErr
		}
		return nil
	}
	pc.closed = true
	pc.closeBound = bound
	started := pc.started
	pc.mu.Unlock()
	defer func() {
		pc.closeErr = err
		close(pc.closeDone)
	}()
	if e := trackerOf(pc.b); e != nil {
		// A close cut with its leave unanswered stays known to the
		// engine, whose Close leaves again (closeForEngine), even when
		// this close returned before that began.
		// Only while the member's session runs (closecut_keep.go).
		defer func() {
			pc.mu.Lock()
			keep := pc.unfinished != nil
			pc.mu.Unlock()
			if !keep {
				e.clients.removePullConsumer(pc)
				return
			}
			keepCutUntil(pc.session.sessionEnds(), func() {
				pc.mu.Lock()
				pc.unfinished = nil
				pc.mu.Unlock()
				e.clients.removePullConsumer(pc)
			})
		}()
	}
	pc.cancel()
	pc.wg.Wait()
	if !started {
		return nil
	}
	if pc.replaced.Load() {
		return nil // the member ID belongs to another incarnation now
	}
	ctx, cancel := bound()
	defer cancel()
	err = leaveGroup(ctx, pc.b, pc.join)
	if !notLeft(err) {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		if !again {
			// Cut by the caller's own bound: Engine.Close, when it
			// closes this pull consumer beside its user, leaves again
			// in its own, and reports only what fails there.
			pc.mu.Lock()
			pc.unfinished = func(ctx context.Context) error {
				if err := leaveGroup(ctx, pc.b, pc.join); notLeft(err) {
					return fmt.Errorf("equeue: pull consumer: leave group: %w", err)
				}
				return nil
			}
			pc.mu.Unlock()
		}
		if !errors.Is(err, cerr) {
			// A broker's error for a call whose context ended need not
			// say so (a transport may report it unavailable).
			return fmt.Errorf("%w (%w)", err, cerr)
		}
	}
	return err
}

package equeue

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/equeue-go/equeue/allocate"
	"github.com/equeue-go/equeue/store"
)

// coordinator is the engine's consumer-group coordinator: membership,
// allocation, grants (who may consume which queue, under which epoch) and
// committed offsets.
//
// Handoff: when allocation moves a queue from member A to member B, A keeps
// its grant until it has stopped, committed and released the queue; only
// then is the queue granted to B, which starts from the committed offset.
type coordinator struct {
	e      *Engine
	mu     sync.Mutex
	groups map[string]*group
	// subscribers indexes groups by topic; a group is (re)indexed on every
	// rebalance, and only groups with members need a topic's changes.
	subscribers subscriberIndex
	// held holds the names of the groups whose deletion is deleting their
	// topics; each channel is closed when it is done (groupdelete_hold.go).
	held map[string]chan struct{}
	// nameGates holds the gates of the group names being deleted or
	// redriven (groupdelete_gate.go).
	nameGates map[string]*nameGate
	// holdWaits counts the joins and commits waiting for a held name (tests).
	holdWaits atomic.Int64
	// epochFloor is the highest epoch or version a deleted group reached,
	// or the stored floor this open starts at (epochfloor.go): groups made
	// afterwards start above it (see create).
	epochFloor int64
	// reservation is the write that raises the stored epoch floor above
	// every epoch this open may grant; reserved is set once it is stored
	// (epochfloor.go).
	reservation store.MetaOp
	reserved    atomic.Bool
	// departed holds the incarnations that left their groups lately: a
	// join of one of them is refused (departures.go).
	departed departures
	// claims holds the names claimed by a coordinator outside the engine,
	// each with when its claim lapses (groupclaim.go).
	claims map[string]time.Time
	// claimSweep is the claim count at which a new claim next drops the
	// lapsed ones (0: claimSweepAt; see setClaim).
	claimSweep int
	// floors indexes groups by the topics whose retention they may hold
	// back (retentionfloor.go).
	floors floorIndex
	// floorHook, when set (tests), runs in a retention pass once a queue's
	// floor is worked out, before its watermark moves.
	floorHook func(QueueRef)
}

type group struct {
	name     string
	model    MessageModel
	subs     []Subscription // sorted by topic
	strategy allocate.Strategy
	from     ConsumeFrom
	fromTime time.Time

	mu         sync.Mutex
	commitMu   sync.Mutex // orders offset writes of this group
	epoch      int64
	version    int64
	resetEpoch int64 // broadcasting: grants' epoch, raised by offset resets
	members    map[string]*member
	owners     map[QueueRef]owner
	target     map[QueueRef]string
	queues     []QueueRef     // sorted (compareRefs): checkGrant searches it
	lanes      map[string]int // priority lanes of subscribed topics with priorities; replaced, never changed
	shared     sharedView     // what every member was last given alike (groupwake.go)
	offsets    map[offsetKey]int64
	// answer is what every member's answer carries alike, and index the
	// members by ID, for heartbeats answered without mu (groupanswer.go).
	answer atomic.Pointer[groupAnswer]
	index  sync.Map // member ID -> *member; changed under mu
	// fz lets listings and heartbeats read the group while g.mu is held
	// across a store write or read (groupfreeze.go).
	fz groupFreeze
	// left is when each member ID of a broadcasting group last left (or
	// expired), and lastUsed when any member did or (a group coordinated
	// outside the engine: Kafka's) when offsets were last committed for
	// it through CommitGroupOffsets or its coordinator last said it is in
	// use (KeepGroup): idle-group and
	// absent-member expiry count from there (groupexpiry.go), so a member
	// that came and went between two checks is not taken as absent all
	// along. Entries go with the member's offsets, or a TTL after it left.
	left      map[string]time.Time
	lastUsed  time.Time
	trackLeft bool // Options.GroupIdleTTL is set: only then is left read (and pruned)
	// attempts holds the stored attempts of unfinished messages of an
	// offset key, when there are any (see OffsetCommit.Attempts).
	attempts map[offsetKey][]MessageAttempts
	// starts holds the start offsets FetchOffsets resolved for keys with
	// no offset set yet (offset_resolvedstart.go).
	starts map[offsetKey]int64

	// sbGate is held shared by a SendBack from its member check until its
	// write is queued (and by a redrive's send of one dead letter,
	// redriveOne, until it returns), and exclusively (fenceSendBacks) by
	// what must see every mark: a reset, the group's deletion, a member's
	// expiry. Their barrier waits for the writes queued under it. It is
	// taken before topic gates, commitMu and mu. A gateLock: a wait for
	// it ends with the waiter's context.
	sbGate gateLock
	// sbMu guards sentBack and sbPending (sendbackmark.go). It is taken
	// after mu when both are held, and never held across a store write:
	// the writer's completion of a SendBack takes it.
	sbMu sync.Mutex
	// sentBack holds the group's send-back marks: per offset key, the
	// offsets of the messages stored in its retry or dead-letter topic.
	sentBack map[offsetKey]map[int64]sentBackMark
	// sbPending holds the SendBacks being written, closed when each is done.
	sbPending map[sentBackRef]chan struct{}
}

type member struct {
	id          string
	incarnation string // of the Start that joined; "" from clients without one
	// lastSeen is when the member last joined or heartbeated, in Unix
	// nanoseconds: a heartbeat of a frozen group sets it without g.mu.
	lastSeen atomic.Int64
	// waiting counts the member's heartbeats in progress, from their
	// arrival (before any lock) to their answer.
	waiting atomic.Int32
	// version is the Assignment.Version of the member's current answer:
	// the group's version at the last change of that answer (groupwake.go).
	version int64
	// answer is the member's own part of its answer, as last published
	// (groupanswer.go).
	answer atomic.Pointer[memberAnswer]
	// wk holds the channel closed when the answer changes or the member
	// is removed, and whether it was (groupanswer.go).
	wk memberWake
	// view is the member's answer in a clustering group, next the buffer
	// the following change computes into.
	view, next memberView
}

type owner struct {
	member string
	epoch  int64
}

// offsetKey keys committed offsets: member is empty for clustering groups.
type offsetKey struct {
	member string
	q      QueueRef
}

// groupMeta is the persisted description of a group.
type groupMeta struct {
	Name     string         `json:"name"`
	Model    MessageModel   `json:"model"`
	Subs     []Subscription `json:"subscriptions"`
	Strategy string         `json:"strategy"`
	From     storedFrom     `json:"from"`
	FromTime time.Time      `json:"from_time"`
}

var (
	keyGroupPrefix  = []byte("grp/")
	keyOffsetPrefix = []byte("off/")
)

func groupKey(name string) []byte { return append(slices.Clone(keyGroupPrefix), name...) }

func offsetMetaKey(g string, k offsetKey) []byte {
	return appendOffsetKey(slices.Clone(keyOffsetPrefix), g, k)
}

// appendOffsetKey appends group g and offset key k to b, as the keys of
// committed offsets and send-back marks name them.
func appendOffsetKey(b []byte, g string, k offsetKey) []byte {
	b = append(b, g...)
	b = append(b, 0)
	b = append(b, k.member...)
	b = append(b, 0)
	b = append(b, k.q.Topic...)
	b = append(b, 0)
	return fmt.Appendf(b, "%d", k.q.Queue)
}

func parseOffsetMetaKey(key []byte) (string, offsetKey, bool) {
	return parseOffsetKey(key[len(keyOffsetPrefix):])
}

// parseOffsetKey decodes what appendOffsetKey appended.
func parseOffsetKey(b []byte) (string, offsetKey, bool) {
	parts := splitZero(b)
	if len(parts) != 4 {
		return "", offsetKey{}, false
	}
	var q int
	if _, err := fmt.Sscanf(parts[3], "%d", &q); err != nil {
		return "", offsetKey{}, false
	}
	return parts[0], offsetKey{member: parts[1], q: QueueRef{Topic: parts[2], Queue: q}}, true
}

// keySet gathers store keys once each.
type keySet struct {
	seen map[string]bool
	keys [][]byte
}

func (s *keySet) add(k []byte) {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if !s.seen[string(k)] {
		s.seen[string(k)] = true
		s.keys = append(s.keys, slices.Clone(k))
	}
}

func splitZero(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	return append(out, string(b[start:]))
}

func newCoordinator(e *Engine) *coordinator {
	return &coordinator{e: e, groups: make(map[string]*group)}
}

func newGroup(m groupMeta) *group {
	st, err := allocate.ByName(m.Strategy)
	if err != nil {
		st = allocate.Average()
	}
	// Joins store their subscriptions sorted (normalizeSubs); metadata
	// read from the store is sorted again, as subscribesTo and the
	// retention floors search them.
	if !slices.IsSortedFunc(m.Subs, compareSubTopics) {
		m.Subs = slices.Clone(m.Subs)
		slices.SortFunc(m.Subs, compareSubTopics)
	}
	return &group{
		name: m.Name, model: m.Model, subs: m.Subs, strategy: st, from: m.From.consumeFrom(), fromTime: m.FromTime,
		members: map[string]*member{}, owners: map[QueueRef]owner{}, target: map[QueueRef]string{},
		offsets: map[offsetKey]int64{}, attempts: map[offsetKey][]MessageAttempts{},
	}
}

// create returns a new group whose epochs and versions start above the
// engine's Options.EpochBase, and above those of every group deleted
// since Open: a group made again after its deletion must not grant a
// queue under an epoch the deleted one granted, or a member's commit or
// pull under the old grant, sent before it saw the deletion, would pass
// the new group's fence (its commit would store the deleted group's
// position in the new group). c.mu must be held.
func (c *coordinator) create(m groupMeta) *group {
	g := newGroup(m)
	base := max(c.e.opts.EpochBase, c.epochFloor)
	g.epoch, g.version, g.resetEpoch = base, base, base
	g.trackLeft = c.e.opts.GroupIdleTTL > 0
	return g
}

// load restores groups and committed offsets.
//
// A group's metadata of ValueThreshold bytes or more (many subscriptions,
// long filters) is kept in Badger's value log, whose bytes a machine crash
// may lose while the key survives. Such a group is loaded as one that has
// only offsets stored (its name is in the key) and its unreadable key is
// deleted: the group's next first member stores its configuration again,
// as every first join does. Failing here instead kept the engine from
// opening at all, after every later crash too. Lost offsets: see below.
func (c *coordinator) load() error {
	if err := c.loadEpochFloor(); err != nil {
		return err
	}
	var (
		lost     []store.MetaOp
		lostMeta []*group
	)
	err := c.e.scanMetaDamaged(keyGroupPrefix, func(k, v []byte, damaged error) error {
		if damaged != nil {
			name := string(k[len(keyGroupPrefix):])
			c.e.log.Error("group metadata lost: the group's next member stores it again",
				"group", name, "err", damaged)
			lostMeta = append(lostMeta, c.loaded(name))
			lost = append(lost, store.MetaOp{Key: slices.Clone(k), Delete: true})
			return nil
		}
		var m groupMeta
		if err := json.Unmarshal(v, &m); err != nil {
			return fmt.Errorf("%w: group metadata: %v", ErrCorrupt, err)
		}
		c.groups[m.Name] = c.create(m)
		return nil
	})
	if err != nil {
		return err
	}
	// A committed offset carrying many attempts reaches ValueThreshold too.
	// One lost reads as offset 0 (a pull below the queue's start moves to
	// it), so its messages are delivered again rather than skipped, and it
	// is stored so, so that scans of the offsets (DeleteGroup) read it.
	err = c.e.scanMetaDamaged(keyOffsetPrefix, func(k, v []byte, damaged error) error {
		name, ok, good := parseOffsetMetaKey(k)
		if good && damaged != nil {
			c.e.log.Error("committed offset lost: the queue is consumed again from its start",
				"group", name, "topic", ok.q.Topic, "queue", ok.q.Queue, "member", ok.member, "err", damaged)
			v = offsetValue(0, nil)
			lost = append(lost, store.MetaOp{Key: slices.Clone(k), Value: v})
		}
		off, atts, goodValue := parseOffsetValue(v)
		if !good || !goodValue {
			return fmt.Errorf("%w: offset key %q", ErrCorrupt, k)
		}
		g := c.loaded(name)
		g.offsets[ok] = off
		if len(atts) > 0 {
			g.attempts[ok] = atts
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, g := range lostMeta {
		// Until a member joins, the group is taken to consume every topic
		// it holds offsets of, so that retention keeping unconsumed
		// messages (consumedBelow) still waits for it; offsets of members
		// of their own say it was a broadcasting group.
		var topics []string
		for k := range g.offsets {
			topics = append(topics, k.q.Topic)
			if k.member != "" {
				g.model = Broadcasting
			}
		}
		slices.Sort(topics)
		for _, t := range slices.Compact(topics) {
			g.subs = append(g.subs, Subscription{Topic: t, Filter: "*"})
		}
	}
	for _, g := range c.groups {
		c.floors.add(g, g.retainedTopics()...)
	}
	if err := c.e.writeMetaAtOpen(lost); err != nil {
		// A read-only store: the keys stay, and the next open tries again.
		c.e.log.Warn("rewriting lost group metadata and offsets; the next open tries again", "keys", len(lost), "err", err)
	}
	return c.loadMarks()
}

// loaded returns the group name as load found it, created when only its
// offsets or marks are stored.
func (c *coordinator) loaded(name string) *group {
	g := c.groups[name]
	if g == nil {
		g = c.create(groupMeta{Name: name})
		c.groups[name] = g
	}
	return g
}

// run expires silent members until the engine closes.
func (c *coordinator) run() {
	every := min(c.e.opts.SessionTimeout/4, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	var swept time.Time
	for {
		select {
		case <-c.e.closing:
			return
		case now := <-t.C:
			c.expire(now)
			every := marksSweepEvery
			if d := c.e.marksSweep.Load(); d > 0 {
				every = time.Duration(d)
			}
			if now.Sub(swept) >= every {
				c.e.marks.sweep(c.liveMember)
				swept = now
			}
		}
	}
}

// marksSweepEvery is how often the pull marks of members that are gone
// are dropped (pullMarks.sweep).
const marksSweepEvery = 10 * time.Second

// liveMember reports whether member is a live member of group.
func (c *coordinator) liveMember(group, member string) bool {
	c.mu.Lock()
	g := c.groups[group]
	c.mu.Unlock()
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.members[member]
	return ok
}

func (c *coordinator) expire(now time.Time) {
	c.mu.Lock()
	gs := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	c.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		var gone []string
		for id, m := range g.members {
			if m.expired(now, c.e.opts.SessionTimeout) {
				gone = append(gone, id)
			}
		}
		for _, id := range gone {
			c.e.log.Warn("group member expired", "group", g.name, "member", id)
			g.removeMember(id)
		}
		if len(gone) > 0 {
			c.rebalance(g)
		}
		g.mu.Unlock()
	}
}

func (c *coordinator) group(name string) (*group, error) {
	c.mu.Lock()
	g := c.groups[name]
	c.mu.Unlock()
	if g == nil {
		return nil, fmt.Errorf("%w: %q", ErrGroupNotFound, name)
	}
	return g, nil
}

// memberGroup returns the group and checks that id is a live member.
// It returns with g.mu held on success.
func (c *coordinator) memberGroup(name, id string) (*group, error) {
	g, err := c.group(name)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	if _, ok := g.members[id]; !ok {
		g.mu.Unlock()
		return nil, fmt.Errorf("%w: %q in group %q", ErrNotMember, id, name)
	}
	return g, nil
}

func (g *group) removeMember(id string) {
	now := time.Now()
	if _, ok := g.members[id]; ok {
		g.lastUsed = now
		if g.model == Broadcasting && g.trackLeft { // only there do members have offsets of their own
			if g.left == nil {
				g.left = map[string]time.Time{}
			}
			g.left[id] = now
		}
	}
	if m := g.members[id]; m != nil {
		m.remove() // its held heartbeat answers that it is no member
		g.index.CompareAndDelete(id, m)
	}
	delete(g.members, id)
	for q, o := range g.owners {
		if o.member == id {
			delete(g.owners, q)
		}
	}
}

// rebalance recomputes the group's queues and allocation under a new epoch
// and grants free queues. g.mu must be held.
func (c *coordinator) rebalance(g *group) { c.rebalanceFencing(g, false) }

// rebalanceFencing is rebalance; with fence, every grant is renewed under
// the new epoch too (the held queues regranted to their holders, see
// regrantOwned, and a broadcasting group's reset epoch raised), before the
// members are told: the answers published (groupanswer.go) carry it at
// once. g.mu must be held.
func (c *coordinator) rebalanceFencing(g *group, fence bool) {
	c.subscribers.set(g)
	c.floors.set(g)
	g.epoch++
	if fence {
		g.resetEpoch = g.epoch
	}
	g.queues = c.subscribedQueues(g, g.queues[:0])
	if !slices.IsSortedFunc(g.queues, compareRefs) {
		sortRefs(g.queues) // checkGrant searches it; subscriptions are kept sorted, so it is already
	}
	g.lanes = c.subscribedLanes(g)
	if g.model == Broadcasting {
		g.notify()
		return
	}
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	// Like RocketMQ, each topic's queues are divided on their own, so a
	// topic with fewer queues than members still spreads evenly. A topic's
	// queues are next to each other in g.queues.
	aq := make([]allocate.Queue, len(g.queues))
	var topics []laneTopic
	for i, q := range g.queues {
		aq[i] = allocate.Queue{Topic: q.Topic, ID: q.Queue}
		if i == 0 || q.Topic != g.queues[i-1].Topic {
			topics = append(topics, laneTopic{name: q.Topic, lanes: c.e.topicLanes(q.Topic)})
		}
		t := &topics[len(topics)-1]
		t.queues = aq[i-len(t.queues) : i+1]
	}
	clear(g.target)
	allocateLanes(g.strategy, topics, ids, g.target) // a queue's lanes go together
	for q := range g.owners {
		if _, ok := g.target[q]; !ok && !hasRef(g.queues, q) {
			delete(g.owners, q) // the queue is gone
		}
	}
	if fence {
		g.regrantOwned()
	}
	g.grantFree()
	g.notify()
}

// subscribedQueues appends the queues of every existing topic g subscribes to.
func (c *coordinator) subscribedQueues(g *group, dst []QueueRef) []QueueRef {
	for _, s := range g.subs {
		if t, ok := c.e.lookupTopic(s.Topic); ok {
			for _, q := range t.queueList() {
				dst = append(dst, QueueRef{Topic: t.name, Queue: q.id})
			}
		}
	}
	return dst
}

// queuesOf returns the queues of every existing topic g subscribes to. A
// group with live members is rebalanced on every change of its topics, so
// the list it keeps is current; one without is not (topicChanged skips
// it), so its list is computed afresh. g.mu must be held.
func (c *coordinator) queuesOf(g *group) []QueueRef {
	if len(g.members) > 0 && len(g.queues) > 0 {
		return g.queues
	}
	return c.subscribedQueues(g, nil)
}

// grantFree grants every unowned queue to its target member. g.mu must be held.
func (g *group) grantFree() {
	for q, id := range g.target {
		if _, held := g.owners[q]; !held {
			g.owners[q] = owner{member: id, epoch: g.epoch}
		}
	}
}

// assignment is member id's view, as the group's last change left it
// (notify), under the engine's session timeout and pull wait cap (o). g.mu
// must be held, and id must be a member.
func (g *group) assignment(id string, o *Options) Assignment {
	m := g.members[id]
	a := Assignment{Group: g.name, Member: id, Epoch: g.epoch, Version: m.version, Queues: []Grant{}, Priorities: g.lanes,
		SessionTimeout: o.SessionTimeout, MaxPullWait: o.MaxPullWait}
	if g.model == Broadcasting {
		a.Queues = slices.Grow(a.Queues, len(g.queues))
		for _, q := range g.queues {
			a.Queues = append(a.Queues, Grant{QueueRef: q, Epoch: g.resetEpoch})
		}
		return a
	}
	// Copies: the view's buffers are reused by later changes.
	a.Queues = append(a.Queues, m.view.queues...)
	if len(m.view.revoking) > 0 {
		a.Revoking = slices.Clone(m.view.revoking)
	}
	a.Pending = m.view.pending
	return a
}

// sameSubs reports whether normalized subscriptions a and b consume the
// same: the same topics, each with the same set of tags (a filter's tags
// in another order select the same messages).
func sameSubs(a, b []Subscription) bool {
	return slices.EqualFunc(a, b, func(x, y Subscription) bool {
		return x.Topic == y.Topic && sameFilter(x.Filter, y.Filter)
	})
}

// sameFilter reports whether filter expressions a and b select the same tags.
func sameFilter(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := parseFilter(a)
	fb, errB := parseFilter(b)
	if errA != nil || errB != nil || fa.all != fb.all || len(fa.tags) != len(fb.tags) {
		return false
	}
	return !slices.ContainsFunc(fa.tags, func(tag string) bool { return !fb.match(tag) })
}

// MaxSubscriptions is the most subscriptions (topics) one join takes; a
// join with more is ErrInvalidArgument and changes nothing. It bounds what
// one join costs, with Options.AutoCreateTopics the topics it creates
// included (one per subscription).
const MaxSubscriptions = 1024

// normalizeSubs validates, normalizes and sorts subscriptions.
func (c *coordinator) normalizeSubs(ctx context.Context, subs []Subscription) ([]Subscription, error) {
	if len(subs) == 0 {
		return nil, fmt.Errorf("%w: no subscriptions", ErrInvalidArgument)
	}
	if len(subs) > MaxSubscriptions {
		return nil, fmt.Errorf("%w: %d subscriptions, more than %d (MaxSubscriptions)", ErrInvalidArgument, len(subs), MaxSubscriptions)
	}
	out := make([]Subscription, 0, len(subs))
	for _, s := range subs {
		f, err := parseFilter(s.Filter)
		if err != nil {
			return nil, err
		}
		if _, err := c.e.topicFor(ctx, s.Topic); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(x Subscription) bool { return x.Topic == s.Topic }) {
			return nil, fmt.Errorf("%w: topic %q subscribed twice", ErrInvalidArgument, s.Topic)
		}
		out = append(out, Subscription{Topic: s.Topic, Filter: f.expr})
	}
	slices.SortFunc(out, func(a, b Subscription) int { return strings.Compare(a.Topic, b.Topic) })
	return out, nil
}

// JoinGroup adds req.Member to req.Group. A member whose model or
// subscriptions differ from the live members' gets ErrSubscriptionMismatch.
// A join under a name that a coordinator outside the engine claims for a
// group of its own with live members (ClaimGroup: a Kafka group) gets
// ErrGroupNameTaken.
// A join of an incarnation that left the group (LeaveGroup) within the
// last SessionTimeout gets ErrNotMember: it was sent before the leave and
// arrived after it (departures.go).
//
// Every error it returns matches ErrJoinRefused: no member was added (a
// member an earlier join of the same incarnation made stays). The one
// exception is an error matching ErrIndeterminate (a write of the join,
// its group's configuration or a topic it made, may be stored but is not
// known durable), which is unknown and matches no refusal.
//
// Broker seam: Consumers and PullConsumers call it on Start;
// applications do not.
func (e *Engine) JoinGroup(ctx context.Context, req *JoinRequest) (Assignment, error) {
	a, err := e.joinGroup(ctx, req)
	if err != nil {
		return Assignment{}, refusedJoin(err)
	}
	return a, nil
}

// joinGroup is JoinGroup. Adding the member is its last step, after
// which it returns no error: each error it returns is a refusal.
func (e *Engine) joinGroup(ctx context.Context, req *JoinRequest) (Assignment, error) {
	if err := e.enter(ctx); err != nil {
		return Assignment{}, err
	}
	defer e.leave()
	if req == nil {
		return Assignment{}, fmt.Errorf("%w: nil join request", ErrInvalidArgument)
	}
	if err := ValidateName(req.Group); err != nil {
		return Assignment{}, err
	}
	if err := validateMemberID(req.Member); err != nil {
		return Assignment{}, err
	}
	if req.Model != Clustering && req.Model != Broadcasting {
		return Assignment{}, fmt.Errorf("%w: unknown message model %d", ErrInvalidArgument, req.Model)
	}
	if req.From < ConsumeFromDefault || req.From > ConsumeFromLatest {
		return Assignment{}, fmt.Errorf("%w: unknown consume-from %d", ErrInvalidArgument, req.From)
	}
	if req.From == ConsumeFromDefault {
		r := *req
		r.From = r.From.resolve()
		req = &r
	}
	stratName := req.Strategy
	if stratName == "" {
		stratName = allocate.Average().Name()
	}
	strat, err := allocate.ByName(stratName)
	if err != nil {
		return Assignment{}, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	// A name claimed from outside is refused before the subscriptions'
	// topics are looked up (and maybe made); the claim is checked again
	// once the group is locked.
	c := e.groups
	c.mu.Lock()
	claimed := c.claimed(req.Group, time.Now())
	c.mu.Unlock()
	if claimed {
		return Assignment{}, claimedErr(req.Group)
	}
	// A join and a deletion of the group are ordered by the name's gate
	// (groupdelete_gate.go): a join that would make a group being deleted
	// again waits for the deletion first, before it makes the group's
	// retry topic (below), and a deletion that begins meanwhile waits
	// until the join is done, to find the group it made, retry topic and
	// all.
	release, err := e.shareNameGate(ctx, req.Group)
	if err != nil {
		return Assignment{}, err
	}
	defer release()
	// The group's own retry topic is the one internal topic a join may create.
	subs, err := e.groups.normalizeSubs(allowInternal(ctx, RetryTopic(req.Group)), req.Subscriptions)
	if err != nil {
		return Assignment{}, err
	}
	g, created, err := c.lockForJoin(ctx, groupMeta{Name: req.Group, Model: req.Model, Subs: subs, Strategy: stratName, From: toStoredFrom(req.From), FromTime: req.FromTime})
	if err != nil {
		return Assignment{}, err
	}
	defer g.mu.Unlock()
	c.mu.Lock()
	claimed = c.claimed(req.Group, time.Now())
	c.mu.Unlock()
	if claimed {
		c.dropIfNew(g, created)
		return Assignment{}, claimedErr(req.Group)
	}
	if c.departed.left(req, time.Now(), e.opts.SessionTimeout) {
		c.dropIfNew(g, created)
		return Assignment{}, fmt.Errorf("%w: %q in group %q: its incarnation left the group", ErrNotMember, req.Member, req.Group)
	}
	if err := e.groups.checkIncarnation(g, req); err != nil {
		return Assignment{}, err
	}
	_, rejoin := g.members[req.Member]
	others := len(g.members)
	if rejoin {
		others--
	}
	if others > 0 && (g.model != req.Model || !sameSubs(g.subs, subs) || g.strategy.Name() != strat.Name()) {
		return Assignment{}, fmt.Errorf("%w: group %q is %s with %v (strategy %s); member %q asks %s with %v (strategy %s)",
			ErrSubscriptionMismatch, g.name, g.model, g.subs, g.strategy.Name(), req.Member, req.Model, subs, strat.Name())
	}
	if others == 0 {
		// Store the group's configuration first; memory follows.
		m := groupMeta{Name: g.name, Model: req.Model, Subs: subs, Strategy: strat.Name(), From: toStoredFrom(req.From), FromTime: req.FromTime}
		applied, err := c.saveGroupMeta(g, m, created)
		if !applied {
			return Assignment{}, err
		}
		if g.model != req.Model {
			g.left = nil // departures of another model's members
		}
		g.model, g.subs, g.strategy, g.from, g.fromTime = req.Model, subs, strat, req.From, req.FromTime
		if err != nil {
			// Stored but maybe not durable: the configuration stands, the
			// member is not added; joining again completes it.
			c.rebalance(g)
			return Assignment{}, notDurable(err, "save group %q", g.name)
		}
	}
	joined := &member{id: req.Member, incarnation: req.Incarnation}
	joined.seen(time.Now())
	g.addMember(joined)
	delete(g.left, req.Member)
	if !rejoin {
		e.log.Info("group member joined", "group", g.name, "member", req.Member)
	}
	c.rebalance(g)
	return g.assignment(req.Member, &e.opts), nil
}

// validateMemberID reports ErrInvalidArgument unless id is 1-255 bytes
// without a NUL byte: the store keys of a broadcasting member's offsets and
// send-back marks separate the member ID from the other parts with NUL, so
// one holding it would be read back as another key (and fail the next Open).
func validateMemberID(id string) error {
	if id == "" || len(id) > 255 || strings.IndexByte(id, 0) >= 0 {
		return fmt.Errorf("%w: member ID must be 1-255 bytes without NUL", ErrInvalidArgument)
	}
	return nil
}

// checkIncarnation refuses a join with the member ID of a live member of
// another incarnation (ErrMemberIDInUse). An incarnation is gone once it
// left the group or its session expired (no heartbeat in progress and none
// for SessionTimeout); such a member is removed here at once, without
// waiting for the next expiry sweep, and the group rebalanced as the sweep
// would: its queues reach the live members even when the join is then
// refused. g.mu must be held.
func (c *coordinator) checkIncarnation(g *group, req *JoinRequest) error {
	m, ok := g.members[req.Member]
	if !ok || req.Incarnation == "" || m.incarnation == "" || m.incarnation == req.Incarnation {
		return nil
	}
	if !m.expired(time.Now(), c.e.opts.SessionTimeout) {
		return fmt.Errorf("%w: %q in group %q", ErrMemberIDInUse, req.Member, g.name)
	}
	c.e.log.Warn("group member expired; a new incarnation takes its ID", "group", g.name, "member", req.Member)
	g.removeMember(req.Member)
	c.rebalance(g)
	return nil
}

// Heartbeat keeps req.Member alive and returns its assignment as soon as
// its version differs from req.KnownVersion, or after req.Wait. A change
// of the group that leaves the member's answer as it was (another member
// joining, leaving or handing over queues of others) does not answer it.
// A nil request, a negative Wait or a member ID JoinGroup would refuse
// gets ErrInvalidArgument and a bad group name ErrInvalidName, whether or
// not the group exists; then an unknown group gets ErrGroupNotFound and a
// member not in it ErrNotMember.
//
// Broker seam: Consumers and PullConsumers call it; applications do not.
func (e *Engine) Heartbeat(ctx context.Context, req *HeartbeatRequest) (Assignment, error) {
	if err := e.enter(ctx); err != nil {
		return Assignment{}, err
	}
	defer e.leave()
	if req == nil || req.Wait < 0 {
		return Assignment{}, fmt.Errorf("%w: bad heartbeat request", ErrInvalidArgument)
	}
	if err := ValidateName(req.Group); err != nil { // whether or not the group exists
		return Assignment{}, err
	}
	if err := validateMemberID(req.Member); err != nil { // whether or not the group exists
		return Assignment{}, err
	}
	g, err := e.groups.group(req.Group)
	if err != nil {
		return Assignment{}, err
	}
	deadline := time.Now().Add(min(req.Wait, e.opts.SessionTimeout/2))
	// The member is seen, and its heartbeat in progress, before any lock
	// is waited for; it is answered from what its group published
	// (groupanswer.go), under g.mu only while that is being published.
	if m := g.indexed(req.Member); m != nil {
		if req.Incarnation != "" && m.incarnation != "" && m.incarnation != req.Incarnation {
			return Assignment{}, fmt.Errorf("%w: %q in group %q belongs to another incarnation", ErrNotMember, req.Member, req.Group)
		}
		m.seen(time.Now())
		m.waiting.Add(1)
		defer func() {
			m.seen(time.Now()) // before the heartbeat ends: an expiry sweep sees one or the other
			m.waiting.Add(-1)
		}()
		if a, done, err := e.publishedHeartbeat(ctx, g, m, req, deadline); done {
			return a, err
		}
	}
	// While the group's lock is held across a store write (a reset, the
	// group's deletion), the heartbeat is answered from the frozen group
	// (groupfreeze.go): a member whose heartbeats waited for the disk
	// would be expired once it came back.
	for g.readLock() {
		a, done, err := e.frozenHeartbeat(ctx, g, req, deadline)
		if done {
			return a, err
		}
	}
	m := g.members[req.Member]
	if m == nil {
		g.mu.Unlock()
		return Assignment{}, fmt.Errorf("%w: %q in group %q", ErrNotMember, req.Member, req.Group)
	}
	if req.Incarnation != "" && m.incarnation != "" && m.incarnation != req.Incarnation {
		g.mu.Unlock()
		return Assignment{}, fmt.Errorf("%w: %q in group %q belongs to another incarnation", ErrNotMember, req.Member, req.Group)
	}
	m.seen(time.Now())
	wait := time.Until(deadline)
	if m.version != req.KnownVersion || req.Wait == 0 || wait <= 0 {
		defer g.mu.Unlock()
		return g.assignment(req.Member, &e.opts), nil
	}
	m.waiting.Add(1)
	changed := m.waitChange() // only a change of this member's answer
	g.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	var stop error
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
		stop = ctx.Err()
	case <-e.closing:
		stop = ErrClosed
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m.seen(time.Now())
	m.waiting.Add(-1)
	if stop != nil {
		return Assignment{}, stop
	}
	if g.members[req.Member] != m {
		return Assignment{}, fmt.Errorf("%w: %q in group %q", ErrNotMember, req.Member, req.Group)
	}
	return g.assignment(req.Member, &e.opts), nil
}

// LeaveGroup removes a member from its group and rebalances at once. A
// leave naming another incarnation than the live member's (one that was
// replaced by a restart) gets ErrNotMember and changes nothing else.
// Whatever it answers, a join of the incarnation it names is refused for
// SessionTimeout after it (see JoinGroup): one sent before the leave
// must not add the member again. A nil request or a member ID JoinGroup
// would refuse gets ErrInvalidArgument and a bad group name
// ErrInvalidName, whether or not the group exists; then an unknown group gets ErrGroupNotFound and a member not in it
// ErrNotMember.
//
// Broker seam: Consumer.Close and PullConsumer.Close call it;
// applications do not.
func (e *Engine) LeaveGroup(ctx context.Context, req *LeaveRequest) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if req == nil {
		return fmt.Errorf("%w: nil leave request", ErrInvalidArgument)
	}
	if err := ValidateName(req.Group); err != nil { // whether or not the group exists
		return err
	}
	if err := validateMemberID(req.Member); err != nil { // whether or not the group exists
		return err
	}
	// Remembered first, so that a join that finds no departure has either
	// added the member this leave removes (both take g.mu) or made the
	// group this leave finds.
	e.groups.departed.add(req, time.Now(), e.opts.SessionTimeout)
	g, err := e.groups.memberGroup(req.Group, req.Member)
	if err != nil {
		return err
	}
	defer g.mu.Unlock()
	if m := g.members[req.Member]; req.Incarnation != "" && m.incarnation != "" && m.incarnation != req.Incarnation {
		return fmt.Errorf("%w: %q in group %q belongs to another incarnation", ErrNotMember, req.Member, req.Group)
	}
	g.removeMember(req.Member)
	e.log.Info("group member left", "group", req.Group, "member", req.Member)
	e.groups.rebalance(g)
	return nil
}

// ReleaseQueues gives up queues so that their new owners can start. A
// member ID JoinGroup would refuse gets ErrInvalidArgument and a bad group
// name ErrInvalidName, whether or not the group exists; then an unknown
// group gets ErrGroupNotFound and a member not in it ErrNotMember. Queues the member does not hold under
// the epoch given are passed by.
//
// Broker seam: Consumers and PullConsumers call it on a handover;
// applications do not.
func (e *Engine) ReleaseQueues(ctx context.Context, groupName, memberID string, queues []Grant) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if err := ValidateName(groupName); err != nil { // whether or not the group exists
		return err
	}
	if err := validateMemberID(memberID); err != nil { // whether or not the group exists
		return err
	}
	g, err := e.groups.memberGroup(groupName, memberID)
	if err != nil {
		return err
	}
	defer g.mu.Unlock()
	released := false
	for _, q := range queues {
		if o, ok := g.owners[q.QueueRef]; ok && o.member == memberID && o.epoch == q.Epoch {
			delete(g.owners, q.QueueRef)
			released = true
		}
	}
	if released {
		g.grantFree()
		g.notify()
	}
	return nil
}

// checkOwner fences a pull: member must own topic/queue under epoch.
func (c *coordinator) checkOwner(groupName, memberID string, epoch int64, topic string, queue int) error {
	g, err := c.memberGroup(groupName, memberID)
	if err != nil {
		return err
	}
	defer g.mu.Unlock()
	return g.checkGrant(memberID, Grant{QueueRef: QueueRef{Topic: topic, Queue: queue}, Epoch: epoch})
}

// checkGrant reports ErrFenced unless member holds q under its epoch. g.mu must be held.
func (g *group) checkGrant(memberID string, q Grant) error {
	if g.model == Broadcasting {
		if q.Epoch != g.resetEpoch || !hasRef(g.queues, q.QueueRef) {
			return fmt.Errorf("%w: %s epoch %d in broadcast group %q (current %d)", ErrFenced, q.QueueRef, q.Epoch, g.name, g.resetEpoch)
		}
		return nil
	}
	o, ok := g.owners[q.QueueRef]
	if !ok || o.member != memberID || o.epoch != q.Epoch {
		return fmt.Errorf("%w: %s is not owned by %q under epoch %d in group %q", ErrFenced, q.QueueRef, memberID, q.Epoch, g.name)
	}
	return nil
}

// topicChanged rebalances the groups subscribed to a topic that was
// created, grown or deleted. DeleteTopic removed a deleted topic's offsets
// already, in the same store write as the topic. A broadcasting group's
// grants are renewed when a topic it reads is deleted, so that a commit made
// under a grant of the old topic cannot land in a topic re-created under the
// same name.
func (c *coordinator) topicChanged(name string, deleted bool) {
	for _, g := range c.subscribers.of(name) {
		g.mu.Lock()
		if slices.ContainsFunc(g.subs, func(s Subscription) bool { return s.Topic == name }) && len(g.members) > 0 {
			c.rebalanceFencing(g, deleted && g.model == Broadcasting)
		}
		g.mu.Unlock()
	}
}

// lockForJoin returns the group named in m with g.mu held, creating it from
// m when it does not exist (created is then true). A group whose first join
// failed is dropped again (see saveGroupMeta): lock the current one. A
// group being deleted is made again only once its deletion is done
// (groupdelete_hold.go).
func (c *coordinator) lockForJoin(ctx context.Context, m groupMeta) (g *group, created bool, err error) {
	for {
		c.mu.Lock()
		if h := c.heldName(m.Name); h != nil {
			c.mu.Unlock()
			if err := c.awaitHold(ctx, h); err != nil {
				return nil, false, err
			}
			continue
		}
		g = c.groups[m.Name]
		created = g == nil
		if created {
			g = c.create(m)
			c.groups[m.Name] = g
		}
		c.mu.Unlock()
		g.mu.Lock()
		c.mu.Lock()
		current := c.groups[m.Name] == g
		c.mu.Unlock()
		if current {
			return g, created, nil
		}
		g.mu.Unlock()
	}
}

// lockForCommit returns group name with its commitMu and mu held, created
// (empty, its epochs above Options.EpochBase) when it does not exist. A group that DeleteGroup removed while
// this waited for its locks is not returned: the name's current group is,
// so no offset is stored for a deleted group. Nor is a group being deleted
// made again (groupdelete_hold.go): then it returns the deletion's hold,
// for the caller to wait for without the locks it holds.
func (c *coordinator) lockForCommit(name string) (g *group, created bool, held chan struct{}) {
	for {
		c.mu.Lock()
		if h := c.heldName(name); h != nil {
			c.mu.Unlock()
			return nil, false, h
		}
		g = c.groups[name]
		created = g == nil
		if created {
			g = c.create(groupMeta{Name: name})
			c.groups[name] = g
		}
		c.mu.Unlock()
		g.commitMu.Lock()
		g.mu.Lock()
		if c.current(g) {
			return g, created, nil
		}
		g.mu.Unlock()
		g.commitMu.Unlock()
	}
}

// current reports whether g is still the group of its name: DeleteGroup
// removes a group while holding its mu, so the answer holds while the
// caller holds g.mu (lock order: g.mu, then c.mu).
func (c *coordinator) current(g *group) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups[g.name] == g
}

// stillMember refuses, with ErrNotMember, a commit or offset fetch of
// member that found g before DeleteGroup removed it and waited for g's
// locks: its offsets would bring the deleted group back at the next open.
// A broadcasting grant names no owner for the deletion to take away, so
// checkGrant alone would let them through. g.mu must be held.
func (c *coordinator) stillMember(g *group, member string) error {
	if !c.current(g) {
		return fmt.Errorf("%w: %q: group %q was deleted", ErrNotMember, member, g.name)
	}
	return nil
}

// saveGroupMeta stores m as g's configuration (see storeMeta for applied),
// with the first one of the open the raised epoch floor (reserveOp).
// When the write did not reach the store and this join created g, g is
// dropped, so the engine is as before the join. g.mu must be held; lock
// order is g.mu, then c.mu. Listings read g frozen meanwhile.
func (c *coordinator) saveGroupMeta(g *group, m groupMeta, created bool) (applied bool, err error) {
	v, err := json.Marshal(m)
	if err == nil {
		reserve := c.reserveOp()
		g.freeze()
		applied, err = c.e.storeMeta(append(reserve, store.MetaOp{Key: groupKey(m.Name), Value: v})...)
		g.thaw()
		if len(reserve) > 0 && err == nil {
			c.reserved.Store(true)
		}
	}
	if applied {
		return true, err
	}
	c.dropIfNew(g, created)
	return false, fmt.Errorf("equeue: save group %q: %w", m.Name, err)
}

// dropIfNew drops g, which a join created (created is true) and then
// failed or was refused before g got a member or offsets, so that the
// engine is as before the join. g.mu must be held; lock order is g.mu,
// then c.mu.
func (c *coordinator) dropIfNew(g *group, created bool) {
	if created && len(g.members) == 0 && len(g.offsets) == 0 {
		c.mu.Lock()
		if c.groups[g.name] == g {
			delete(c.groups, g.name)
		}
		c.mu.Unlock()
		c.floors.remove(g)
	}
}

func (e *Engine) notifyTopicChange(name string) {
	_, exists := e.lookupTopic(name)
	e.groups.topicChanged(name, !exists)
}

// regrantOwned grants every held queue again to the member holding it,
// under the group's current epoch: the holder's grant is fenced (its
// pulls and commits under the old epoch are refused), but the queue stays
// with it. A queue the holder is handing over (its drain waits for a
// running handler) thus still goes to its next owner only once the holder
// released it; dropping the holders instead granted it to the next owner
// at once, while the old one's handler still ran. g.mu must be held.
func (g *group) regrantOwned() {
	for q, o := range g.owners {
		if o.epoch != g.epoch {
			g.owners[q] = owner{member: o.member, epoch: g.epoch}
		}
	}
}

// compareSubTopics orders subscriptions by topic.
func compareSubTopics(a, b Subscription) int { return strings.Compare(a.Topic, b.Topic) }

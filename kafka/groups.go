package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// The classic group protocol, coordinated by the listener: members join,
// the leader computes the assignment on the client side, the broker relays
// it. Membership is in memory; committed offsets go to the engine.

type groupState int

const (
	stateEmpty groupState = iota
	statePreparing
	stateCompleting
	stateStable
)

func (s groupState) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable"}[s]
}

type coordinator struct {
	s       *Server
	mu      sync.Mutex
	term    uint64 // the leadership term the groups are of (Server.term)
	groups  map[string]*kgroup
	cgroups map[string]*cgroup     // KIP-848 consumer groups (consumergroups.go)
	commits map[string]*commitGate // by group name (commitgate.go)
	reads   uint64                 // topic reads begun by heartbeats (readTopics)
	// claimed holds the names the listener claims in the engine, joining
	// how many joins of each are under way (groupclaims.go). claimMu
	// orders a join's claim and the tick's release of one.
	claimed map[string]time.Time // name -> when its claim was last made
	joining map[string]int
	claimMu sync.Mutex
}

// lock locks c, first forgetting the groups of an earlier leadership term
// (see Server.term): a node that leads again coordinates them afresh, as
// the leaders between did.
func (c *coordinator) lock() {
	term := c.s.term()
	c.mu.Lock()
	if term != c.term {
		c.forgetAll()
		c.term = term
	}
}

type kgroup struct {
	name         string
	state        groupState
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*kmember
	// joined is closed when the current join phase completes; synced when
	// the leader's assignment of the current generation arrived or a new
	// rebalance began. Waiting calls hold a copy and re-check state.
	joined   chan struct{}
	synced   chan struct{}
	deadline time.Time // of the join phase
	// emptySince is when the coordinator's tick first found the group
	// without members since it last had some (zero while it has some,
	// and set so by a join, which a tick may not see); see emptyGroupKeep.
	emptySince time.Time
	// pending holds the member IDs given out with MEMBER_ID_REQUIRED
	// (KIP-394) that no join carried yet, each with when it expires.
	pending map[string]time.Time
}

// emptyGroupKeep is how long the coordinator keeps a group (classic or
// KIP-848) that has no members before it forgets it. Clients that use a
// new group ID each run (console consumers, kcat -G with a generated name)
// would otherwise leave one behind per run for as long as the listener
// runs. A forgotten group's committed offsets stay in the engine (and
// ListGroups still names a group that has them); its next member starts a
// new generation count, which member IDs, unique per join, make safe.
var emptyGroupKeep = time.Minute

type kmember struct {
	id, clientID, clientHost string
	instanceID               *string // its group.instance.id, if static (classicstatic.go)
	protocols                []kmsg.JoinGroupRequestProtocol
	session, rebalance       time.Duration
	lastSeen                 time.Time
	busy                     int  // join or sync calls waiting
	rejoined                 bool // joined in the current join phase
	join                     *kmsg.JoinGroupResponse
	assignment               []byte
	// gone is closed once the member is no longer the group's (remove,
	// replaceStatic): its waiting join or sync ends at once.
	gone chan struct{}
	// fenced is set when another member of its instance took its place
	// (replaceStatic).
	fenced bool
}

// newKmember returns a member of ID id, not fenced.
func newKmember(id string) *kmember {
	return &kmember{id: id, gone: make(chan struct{})}
}

func newCoordinator(s *Server) *coordinator {
	return &coordinator{s: s, groups: map[string]*kgroup{}, cgroups: map[string]*cgroup{}, commits: map[string]*commitGate{},
		claimed: map[string]time.Time{}, joining: map[string]int{}}
}

// run expires silent members, ends join phases whose rebalance timeout
// passed, keeps the groups that have members in use in the engine (keep)
// and their names claimed (renewClaims), and forgets idle producers'
// sequence state and that of deleted topics, until ctx ends; then it
// releases the claims.
func (c *coordinator) run(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	lastExpiry := time.Now()
	for {
		select {
		case <-ctx.Done():
			c.releaseClaims()
			return
		case now := <-t.C:
			live := c.tick(now)
			c.keep(ctx, live)
			c.renewClaims(ctx, live)
			if now.Sub(lastExpiry) > time.Minute {
				c.sweepProducers(ctx, now)
				lastExpiry = now
			}
		}
	}
}

// tick expires silent members and ends join phases whose rebalance
// timeout passed. It returns the groups, of both protocols, that still
// have members.
func (c *coordinator) tick(now time.Time) (live []string) {
	leading := c.s.leads()
	c.lock()
	defer c.mu.Unlock()
	c.reopenDrainedGates()
	c.forgetIdleGates()
	if !leading {
		c.forgetAll()
		return nil
	}
	for name, g := range c.cgroups {
		for _, id := range g.expire(now) {
			c.s.log.Info("kafka: consumer group member dropped", "group", name, "member", id)
		}
		// An empty KIP-848 group is kept as long as an empty classic one
		// (emptyGroupKeep): Kafka keeps it, Empty, until its offsets
		// expire. It is not kept in use in the engine (keep), so
		// equeue.Options.GroupIdleTTL counts from its last member.
		switch {
		case len(g.members) > 0:
			g.emptySince = time.Time{}
			live = append(live, name)
		case g.emptySince.IsZero():
			g.emptySince = now
		case now.Sub(g.emptySince) > emptyGroupKeep:
			delete(c.cgroups, name)
		}
	}
	for _, g := range c.groups {
		var gone []string
		for id, m := range g.members {
			if m.busy == 0 && now.Sub(m.lastSeen) > m.session && !(g.state == statePreparing && m.rejoined) {
				gone = append(gone, id)
			}
		}
		// A group without members that is not Empty was left by a
		// LeaveGroup whose connection closed while it waited (leave).
		abandoned := len(g.members) == 0 && g.state != stateEmpty
		due := len(gone) > 0 || abandoned || (g.state == statePreparing && (now.After(g.deadline) || g.allJoined()))
		if due && !c.commitsSettled(g.name) {
			// A change of generation waits for the commits in flight:
			// left to a later round, as waiting here would hold up
			// every group. The gate is shut meanwhile, so that new
			// commits wait (checkCommitter): a stream of them, each
			// sent before the one before was stored, would otherwise
			// put the change off for as long as it goes on. The round
			// after the last one left makes it (reopenDrainedGates).
			c.commits[g.name].drain()
			if len(g.members) > 0 {
				live = append(live, g.name)
			}
			continue
		}
		for _, id := range gone {
			c.s.log.Info("kafka: group member expired", "group", g.name, "member", id)
			g.remove(id)
		}
		for id, until := range g.pending {
			if now.After(until) {
				delete(g.pending, id)
			}
		}
		switch {
		case g.state == statePreparing && (now.After(g.deadline) || g.allJoined()):
			g.complete()
		case len(gone) > 0 || abandoned:
			g.rebalance(now)
		}
		if len(g.members) > 0 {
			live = append(live, g.name)
		}
		switch {
		case len(g.members) > 0 || len(g.pending) > 0 || g.state != stateEmpty:
			g.emptySince = time.Time{}
		case g.emptySince.IsZero():
			g.emptySince = now
		case now.Sub(g.emptySince) > emptyGroupKeep:
			delete(c.groups, g.name)
		}
	}
	return live
}

// keep tells the engine that the groups named are in use (Broker.KeepGroup):
// Kafka clients commit only offsets that moved, so a group whose members
// consume a quiet topic commits nothing, and equeue.Options.GroupIdleTTL,
// which counts a Kafka group's idle time from its last commit, would delete
// its offsets under its members. Kafka keeps a group's offsets while it has
// members (KIP-211). Called every tick, with c unlocked: the call only
// stamps the group in the engine's memory. A group that never committed is
// not in the engine (ErrGroupNotFound): it has nothing to keep.
func (c *coordinator) keep(ctx context.Context, groups []string) {
	for _, name := range groups {
		err := c.s.b.KeepGroup(ctx, name)
		if err != nil && !errors.Is(err, equeue.ErrGroupNotFound) && ctx.Err() == nil {
			c.s.log.Debug("kafka: keeping a group in use", "group", name, "err", err)
		}
	}
}

// forgetAll drops every group, on a cluster node that no longer leads or
// leads in a new term: the leader's listener coordinates them afresh, so a
// member this one kept (and its generation) would only stall a later
// rebalance here, or commit as a member of a generation that is over.
// Waiting joins and syncs end with UNKNOWN_MEMBER_ID; the members rejoin
// wherever FindCoordinator sends them.
func (c *coordinator) forgetAll() {
	if len(c.groups) == 0 && len(c.cgroups) == 0 {
		return
	}
	c.s.log.Info("kafka: groups of an earlier leadership are forgotten", "groups", len(c.groups)+len(c.cgroups))
	// The commit gates stay: a group coordinated afresh here still waits
	// for the commits in flight.
	c.cgroups = map[string]*cgroup{}
	for _, g := range c.groups {
		for id := range g.members {
			g.remove(id)
		}
		g.toEmpty()
	}
	c.groups = map[string]*kgroup{}
}

func (g *kgroup) allJoined() bool {
	for _, m := range g.members {
		if !m.rejoined {
			return false
		}
	}
	return true
}

func (g *kgroup) remove(id string) {
	if m := g.members[id]; m != nil {
		close(m.gone) // its waiting join or sync ends (UNKNOWN_MEMBER_ID)
	}
	delete(g.members, id)
	if g.leader == id {
		g.leader = ""
	}
}

// rebalance starts a join phase: every member must join again. Members
// waiting for an assignment are released with REBALANCE_IN_PROGRESS.
func (g *kgroup) rebalance(now time.Time) {
	if len(g.members) == 0 {
		g.toEmpty()
		return
	}
	if g.state != statePreparing {
		g.state = statePreparing
		g.joined = make(chan struct{})
		var longest time.Duration
		for _, m := range g.members {
			m.rejoined = false
			longest = max(longest, m.rebalance)
		}
		g.deadline = now.Add(longest)
	}
	g.wakeSync()
}

func (g *kgroup) wakeSync() {
	if g.synced != nil {
		close(g.synced)
	}
	g.synced = make(chan struct{})
}

// toEmpty ends the group's generation and its join phase: it has no
// members. The caller settled the group's commit gate (coordinator.settle),
// or forgets the group (forgetAll).
func (g *kgroup) toEmpty() {
	if g.state != stateEmpty {
		g.generation++
	}
	g.state, g.leader, g.protocol = stateEmpty, "", ""
	if g.joined != nil {
		close(g.joined)
		g.joined = nil
	}
	g.wakeSync()
}

// complete ends a join phase: members that did not join are dropped, the
// generation rises, a protocol every member supports is chosen, and each
// waiting join gets its answer (the leader's lists every member). The
// caller settled the group's commit gate (coordinator.settle).
func (g *kgroup) complete() {
	for id, m := range g.members {
		// A static member is kept until its session runs out, as Kafka
		// keeps it: its instance may be restarting (classicstatic.go).
		if !m.rejoined && m.instanceID == nil {
			g.remove(id)
		}
	}
	if len(g.members) == 0 {
		g.toEmpty()
		return
	}
	ids := slices.Sorted(maps.Keys(g.members))
	var joined []string
	for _, id := range ids {
		if g.members[id].rejoined {
			joined = append(joined, id)
		}
	}
	if len(joined) == 0 {
		// Only static members that did not join: the phase waits another
		// rebalance timeout, as Kafka's does, for one of them to join or
		// their sessions to run out.
		var longest time.Duration
		for _, m := range g.members {
			longest = max(longest, m.rebalance)
		}
		g.deadline = time.Now().Add(longest)
		return
	}
	if g.leader == "" || !g.members[g.leader].rejoined {
		g.leader = joined[0]
	}
	g.protocol = g.chooseProtocol(ids)
	g.generation++
	g.state = stateCompleting
	for _, id := range ids {
		m := g.members[id]
		m.assignment = nil
		if !m.rejoined {
			continue
		}
		r := kmsg.NewPtrJoinGroupResponse()
		r.Generation, r.LeaderID, r.MemberID = g.generation, g.leader, id
		// Copies: the answer is encoded after the lock is released, while
		// a later join may change the group's fields.
		r.Protocol, r.ProtocolType = kmsg.StringPtr(g.protocol), kmsg.StringPtr(g.protocolType)
		if id == g.leader {
			r.Members = g.memberList(ids)
		}
		m.join = r
	}
	close(g.joined)
	g.joined = nil
	g.wakeSync()
}

// memberList lists the members ids, with their metadata of the group's
// protocol, as a join answer gives them to the leader.
func (g *kgroup) memberList(ids []string) []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(ids))
	for _, id := range ids {
		m := g.members[id]
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.InstanceID = id, m.instanceID
		for _, p := range m.protocols {
			if p.Name == g.protocol {
				jm.ProtocolMetadata = p.Metadata
			}
		}
		out = append(out, jm)
	}
	return out
}

// chooseProtocol picks, among the leader's protocols in its order of
// preference, the first every member supports.
func (g *kgroup) chooseProtocol(ids []string) string {
	for _, p := range g.members[g.leader].protocols {
		all := true
		for _, id := range ids {
			if !supports(g.members[id].protocols, p.Name) {
				all = false
				break
			}
		}
		if all {
			return p.Name
		}
	}
	return g.members[g.leader].protocols[0].Name
}

func supports(ps []kmsg.JoinGroupRequestProtocol, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

func newMemberID(clientID string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	if clientID == "" {
		clientID = "member"
	}
	return clientID + "-" + hex.EncodeToString(b[:])
}

func (c *coordinator) join(ctx context.Context, h header, remote string, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation, resp.MemberID = -1, req.MemberID
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.GetVersion() == 0 || rebalance <= 0 {
		rebalance = session
	}
	switch {
	case !c.s.validGroup(req.Group):
		// A name the engine cannot store offsets under: the members would
		// consume with every commit refused (offsetCommit).
		resp.ErrorCode = errInvalidGroupID
		return resp
	case session < c.s.o.MinSessionTimeout || session > c.s.o.MaxSessionTimeout:
		resp.ErrorCode = errInvalidSessionTimeout
		return resp
	case len(req.Protocols) == 0 || req.ProtocolType == "":
		resp.ErrorCode = errInconsistentGroupProtocol
		return resp
	case c.nativeGroup(ctx, req.Group):
		resp.ErrorCode = errGroupAuthorizationFailed // as its commits would be
		return resp
	}
	code, claimed := c.claim(ctx, req.Group)
	defer claimed()
	if code != errNone {
		resp.ErrorCode = code // a native group took the name meanwhile
		return resp
	}
	c.lock()
	if cg := c.cgroups[req.Group]; cg != nil && len(cg.members) > 0 {
		c.mu.Unlock()
		resp.ErrorCode = errInconsistentGroupProtocol // a KIP-848 group of that name has members
		return resp
	}
	// An empty KIP-848 group of that name becomes a classic one, as
	// Kafka's coordinator converts it.
	delete(c.cgroups, req.Group)
	g := c.groups[req.Group]
	if g == nil {
		g = &kgroup{name: req.Group, members: map[string]*kmember{}, synced: make(chan struct{})}
		c.groups[req.Group] = g
	}
	var static *kmember // the member of the instance ID named
	if req.InstanceID != nil {
		static = g.staticMember(*req.InstanceID)
	}
	self := req.MemberID
	if self == "" && static != nil {
		self = static.id // whose place the joining member takes
	}
	if len(g.members) > 0 && (g.protocolType != req.ProtocolType || !g.sharesProtocol(req.Protocols, self)) {
		c.mu.Unlock()
		resp.ErrorCode = errInconsistentGroupProtocol
		return resp
	}
	now := time.Now()
	id := req.MemberID
	m := g.members[id]
	known := m != nil // a member joining again under its member ID
	formerLeader := g.leader
	switch {
	case id == "" && static != nil:
		// The instance restarted (classicstatic.go).
		c.s.log.Info("kafka: static group member replaced", "group", g.name, "instance", *req.InstanceID, "member", static.id)
		m = g.replaceStatic(static, newMemberID(*req.InstanceID))
		id = m.id
	case id == "" && req.GetVersion() >= 4 && req.InstanceID == nil:
		// KIP-394: the ID comes back with MEMBER_ID_REQUIRED and only a
		// join carrying it makes a member, so a join the client gave up
		// on leaves none behind. A static member joins at once, as in
		// Kafka.
		id = newMemberID(h.clientID)
		if g.pending == nil {
			g.pending = map[string]time.Time{}
		}
		g.pending[id] = now.Add(session)
		g.emptySince = time.Time{}
		c.mu.Unlock()
		resp.MemberID, resp.ErrorCode = id, errMemberIDRequired
		return resp
	case id == "":
		if req.InstanceID != nil {
			id = newMemberID(*req.InstanceID)
		} else {
			id = newMemberID(h.clientID)
		}
		m = newKmember(id)
		m.instanceID = req.InstanceID
		g.members[id] = m
	case static != nil && static.id != id:
		c.mu.Unlock()
		resp.ErrorCode = errFencedInstanceID
		return resp
	case req.InstanceID != nil && static == nil:
		// Kafka's answer: the member joins again without a member ID.
		c.mu.Unlock()
		resp.ErrorCode = errUnknownMemberID
		return resp
	case m == nil:
		if _, ok := g.pending[id]; !ok {
			c.mu.Unlock()
			resp.ErrorCode = errUnknownMemberID
			return resp
		}
		delete(g.pending, id)
		m = newKmember(id)
		g.members[id] = m
	}
	if known {
		if r := g.rejoinInPlace(m, req.Protocols); r != nil {
			m.lastSeen = now
			c.mu.Unlock()
			return r
		}
	}
	g.emptySince = time.Time{}
	m.clientID, m.clientHost = h.clientID, remote
	m.protocols, m.session, m.rebalance, m.lastSeen = req.Protocols, session, rebalance, now
	g.protocolType = req.ProtocolType
	if id != req.MemberID && static != nil {
		if r := g.staticRejoin(m, formerLeader, req.GetVersion()); r != nil {
			c.mu.Unlock()
			return r
		}
	}
	g.rebalance(now)
	m.rejoined, m.join = true, nil
	m.busy++
	for g.state == statePreparing && g.allJoined() && c.groups[g.name] == g && ctx.Err() == nil {
		if c.settle(ctx, g.name) {
			g.complete()
		}
	}
	for m.join == nil && g.members[id] == m && g.state == statePreparing {
		wait := g.joined
		c.mu.Unlock()
		select {
		case <-wait:
		case <-m.gone:
		case <-ctx.Done():
		}
		c.lock()
		if ctx.Err() != nil {
			break
		}
	}
	m.busy--
	m.lastSeen = time.Now()
	defer c.mu.Unlock()
	switch {
	case g.members[id] != m:
		resp.ErrorCode = m.goneCode()
	case m.join != nil:
		r := m.join
		m.join = nil
		return r
	default:
		resp.ErrorCode = errRebalanceInProgress
	}
	return resp
}

// sharesProtocol reports whether one of ps is supported by every member
// other than self, as Kafka requires of a joining member: sharing a
// protocol with some member is not enough, the group needs one that all
// of them know (chooseProtocol).
func (g *kgroup) sharesProtocol(ps []kmsg.JoinGroupRequestProtocol, self string) bool {
	for _, p := range ps {
		all := true
		for id, m := range g.members {
			if id != self && !supports(m.protocols, p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// member finds a live member of a group of the given generation, of the
// instance named if one is (checkInstance), or says why not.
func (c *coordinator) member(group, id string, instance *string, generation int32) (*kgroup, *kmember, int16) {
	g := c.groups[group]
	if g == nil {
		return nil, nil, errUnknownMemberID
	}
	if code := g.checkInstance(id, instance); code != errNone {
		return g, nil, code
	}
	m := g.members[id]
	if m == nil {
		return g, nil, errUnknownMemberID
	}
	if generation != g.generation {
		return g, m, errIllegalGeneration
	}
	return g, m, errNone
}

func (c *coordinator) sync(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	c.lock()
	defer c.mu.Unlock()
	g, m, code := c.member(req.Group, req.MemberID, req.InstanceID, req.Generation)
	if code != errNone {
		resp.ErrorCode = code
		return resp
	}
	// Copies, as in complete: the answer is encoded after the lock is released.
	resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
	m.lastSeen = time.Now()
	if g.state == stateCompleting && g.leader == m.id {
		for _, a := range req.GroupAssignment {
			if om := g.members[a.MemberID]; om != nil {
				om.assignment = a.MemberAssignment
			}
		}
		g.state = stateStable
		g.wakeSync()
	}
	// Followers wait for the leader's assignment: no timer ends the wait,
	// only the assignment, a new rebalance, or the connection closing.
	gen := g.generation
	m.busy++
	for g.state == stateCompleting && g.generation == gen && g.members[m.id] == m {
		wait := g.synced
		c.mu.Unlock()
		select {
		case <-wait:
		case <-m.gone:
		case <-ctx.Done():
		}
		c.lock()
		if ctx.Err() != nil {
			break
		}
	}
	m.busy--
	m.lastSeen = time.Now()
	switch {
	case g.members[m.id] != m:
		resp.ErrorCode = m.goneCode()
	case g.generation != gen || g.state != stateStable:
		resp.ErrorCode = errRebalanceInProgress
	default:
		resp.MemberAssignment = m.assignment
	}
	return resp
}

func (c *coordinator) heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := kmsg.NewPtrHeartbeatResponse()
	c.lock()
	defer c.mu.Unlock()
	g, m, code := c.member(req.Group, req.MemberID, req.InstanceID, req.Generation)
	if m != nil {
		m.lastSeen = time.Now()
	}
	if code == errNone && g.state == statePreparing {
		code = errRebalanceInProgress
	}
	resp.ErrorCode = code
	return resp
}

func (c *coordinator) leave(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := kmsg.NewPtrLeaveGroupResponse()
	ids, instances := []string{req.MemberID}, []*string{nil}
	if req.GetVersion() >= 3 {
		ids, instances = ids[:0], instances[:0]
		for _, m := range req.Members {
			ids, instances = append(ids, m.MemberID), append(instances, m.InstanceID)
		}
	}
	c.lock()
	defer c.mu.Unlock()
	g := c.groups[req.Group]
	left := 0
	for i, id := range ids {
		code := errNone
		switch {
		case g == nil:
			code = errUnknownMemberID
		case id == "" && instances[i] != nil:
			// By the instance alone, as an administrator removes a
			// static member (classicstatic.go).
			sm := g.staticMember(*instances[i])
			if sm == nil {
				code = errUnknownMemberID
				break
			}
			c.s.log.Info("kafka: group member removed", "group", g.name, "member", sm.id, "instance", *instances[i])
			g.remove(sm.id)
			left++
		case !g.pending[id].IsZero():
			delete(g.pending, id) // given out, not joined yet: Kafka forgets it so
		case g.checkInstance(id, instances[i]) != errNone:
			code = g.checkInstance(id, instances[i])
		case g.members[id] != nil:
			c.s.log.Info("kafka: group member left", "group", g.name, "member", id)
			g.remove(id)
			left++
		default:
			code = errUnknownMemberID
		}
		if req.GetVersion() >= 3 {
			lm := kmsg.NewLeaveGroupResponseMember()
			lm.MemberID, lm.InstanceID, lm.ErrorCode = id, req.Members[i].InstanceID, code
			resp.Members = append(resp.Members, lm)
		} else {
			resp.ErrorCode = code
		}
	}
	var generation int32 // the one the members left
	if g != nil {
		generation = g.generation
	}
	for left > 0 && c.groups[g.name] == g && g.generation == generation {
		// A new generation, or the group's end without members, waits
		// for the commits in flight (settle); a join phase begins at once.
		// One that a join or the coordinator's tick began meanwhile is
		// without the members that left: nothing is left to do.
		ends := len(g.members) == 0 && g.state != stateEmpty
		completes := g.state == statePreparing && g.allJoined() && len(g.members) > 0
		if (ends || completes) && !c.settle(ctx, g.name) {
			if ctx.Err() != nil {
				break // the coordinator's tick ends what was begun
			}
			continue
		}
		if completes {
			g.complete()
		} else {
			g.rebalance(time.Now())
		}
		break
	}
	return resp
}

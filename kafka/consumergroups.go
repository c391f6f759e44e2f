package kafka

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// Consumer groups of the KIP-848 protocol ("next-gen", group.protocol =
// consumer): members heartbeat (ConsumerGroupHeartbeat) with what they
// subscribe to and what they own, and the listener assigns the partitions
// itself, spreading each topic's partitions over the members subscribed to
// it as the engine's averaging allocation does (contiguous ranges, the
// first members one more). A partition moves to another member only after
// the member that had it reported it released (a heartbeat whose owned
// partitions leave it out), or left, or was dropped: no two members ever
// hold one partition. Membership is in memory, like the classic groups';
// offsets are committed to the engine.

// tpart is one partition of a topic.
type tpart struct {
	topic string
	part  int32
}

type cgroup struct {
	name    string
	epoch   int32 // the group epoch: rises with every change of members, subscriptions or partitions
	members map[string]*cmember
	// target is each member's share as of targetEpoch, for the topics and
	// partition counts in layout.
	target      map[string]map[tpart]bool
	targetEpoch int32
	layout      string
	ids         map[string][16]byte // topic IDs of the topics in layout
	assignor    string              // the last one a member asked for
	read        uint64              // the topic read (coordinator.reads) last retargeted with
	// emptySince is when the coordinator's tick first found the group
	// without members since it last had some (zero while it has some,
	// and set so by a join, which a tick may not see); see emptyGroupKeep.
	emptySince time.Time
}

type cmember struct {
	id             string
	instanceID     string // its group.instance.id, if any (staticmembers.go)
	away           bool   // a static member that left for a while (member epoch -2)
	epoch          int32  // the member epoch
	prevEpoch      int32  // the one before, which a full heartbeat may still carry
	clientID, host string
	topics         []string
	regex          *regexp.Regexp
	regexSrc       string
	session, rebal time.Duration
	lastSeen       time.Time
	assigned       map[tpart]bool // what it was last told it has
	releasing      map[tpart]bool // taken from it, not yet reported released
	// since is the member epoch each partition of assigned and releasing
	// was given to it at: a commit of an older epoch is not its (the
	// partition may have been another member's in between).
	since        map[tpart]int32
	releaseSince time.Time // when releasing became non-empty
	delivered    bool      // its assignment was sent since it changed
}

// Codes of the KIP-848 protocol.
const (
	errFencedMemberEpoch    int16 = 110
	errUnsupportedAssign    int16 = 112
	errStaleMemberEpoch     int16 = 113
	errInvalidRegex         int16 = 128
	consumerProtocolType          = "consumer"
	assignorUniform               = "uniform"
	assignorRange                 = "range"
	defaultConsumerInterval       = 5 * time.Second
	defaultConsumerSession        = 45 * time.Second
)

// topicID is the Kafka topic ID of an engine topic: the same on every
// listener, and new when a topic of that name is deleted and created again
// (which gets another TopicInfo.ID, if not another CreatedAt). The name and
// CreatedAt keep apart the topics of engines that share names and IDs.
func topicID(ti equeue.TopicInfo) [16]byte {
	h := sha256.New()
	h.Write([]byte("equeue topic\x00"))
	h.Write([]byte(ti.Name))
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(ti.CreatedAt.UnixNano())))
	h.Write(binary.BigEndian.AppendUint32(nil, ti.ID))
	var id [16]byte
	copy(id[:], h.Sum(nil))
	id[6] = id[6]&0x0f | 0x80 // a UUID of version 8 (custom), variant 10
	id[8] = id[8]&0x3f | 0x80
	return id
}

// consumerHeartbeat serves ConsumerGroupHeartbeat.
func (c *coordinator) consumerHeartbeat(ctx context.Context, h header, remote string, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	switch {
	case !c.s.validGroup(req.Group):
		return fail(errInvalidGroupID, "")
	case req.MemberEpoch < leaveStaticEpoch:
		return fail(errInvalidRequest, "member epoch below -2")
	case (req.GetVersion() >= 1 || req.MemberEpoch != 0) && blank(req.MemberID):
		// Only a v0 join has the coordinator make the member's ID.
		return fail(errInvalidRequest, "a member ID is required")
	case req.InstanceID != nil && blank(*req.InstanceID):
		return fail(errInvalidRequest, "an empty instance ID")
	case req.RackID != nil && blank(*req.RackID):
		return fail(errInvalidRequest, "an empty rack ID")
	case req.MemberEpoch == leaveStaticEpoch && req.InstanceID == nil:
		return fail(errInvalidRequest, "a static member's leave (member epoch -2) names its instance ID")
	case req.MemberEpoch == 0 && req.RebalanceTimeoutMillis == -1:
		// -1 is "unchanged", which a join has nothing to be the same as.
		return fail(errInvalidRequest, "a joining member gives its rebalance timeout")
	case req.MemberEpoch == 0 && (req.Topics == nil || len(req.Topics) > 0):
		// Null is "unchanged" too: a join says it owns nothing.
		return fail(errInvalidRequest, "a joining member owns no partitions (an empty list, not null)")
	case req.MemberEpoch == 0 && req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
		return fail(errInvalidRequest, "a joining member names its subscription")
	case req.ServerAssignor != nil && *req.ServerAssignor != assignorUniform && *req.ServerAssignor != assignorRange:
		return fail(errUnsupportedAssign, "assignors served: uniform, range (both spread partitions evenly)")
	}
	var regex *regexp.Regexp
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		re, err := regexp.Compile("^(?:" + *req.SubscribedTopicRegex + ")$")
		if err != nil {
			return fail(errInvalidRegex, err.Error())
		}
		regex = re
	}
	if req.MemberEpoch < 0 {
		// A leave. Kafka looks the group up first: to a group that is not
		// a KIP-848 one (none of that name, or a classic one) it answers
		// GROUP_ID_NOT_FOUND; of a member the group does not have (it
		// left, or was dropped, already) UNKNOWN_MEMBER_ID. A leave that
		// names an instance ID is the instance's member's (staticLeave).
		c.lock()
		g := c.cgroups[req.Group]
		if g == nil {
			c.mu.Unlock()
			return fail(errGroupIDNotFound, "no KIP-848 group of that name")
		}
		if req.InstanceID != nil {
			code := g.staticLeave(req.MemberID, *req.InstanceID, req.MemberEpoch, time.Now())
			c.mu.Unlock()
			if code != errNone {
				return fail(code, "")
			}
			resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(req.MemberID), req.MemberEpoch
			return resp
		}
		known := g.members[req.MemberID] != nil
		if known {
			g.drop(req.MemberID)
		}
		c.mu.Unlock()
		if !known {
			return fail(errUnknownMemberID, "")
		}
		resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(req.MemberID), req.MemberEpoch
		return resp
	}

	if req.MemberEpoch == 0 && c.nativeGroup(ctx, req.Group) {
		return fail(errGroupAuthorizationFailed, "a native consumer group has that name")
	}
	if req.MemberEpoch == 0 {
		code, claimed := c.claim(ctx, req.Group)
		defer claimed()
		if code != errNone {
			return fail(code, "a native consumer group has that name")
		}
	}
	infos, read, code, msg := c.readTopics(ctx, req.Group, req.SubscribedTopicNames, regex != nil)
	if code != errNone {
		return fail(code, msg)
	}
	defer c.mu.Unlock() // readTopics returned with c locked
	if req.MemberEpoch == 0 {
		c.convertEmptyClassic(req.Group) // readTopics found it without members
	}
	now := time.Now()
	g := c.cgroups[req.Group]
	if g == nil {
		if req.MemberEpoch != 0 {
			// Only a joining member makes a group, as in Kafka: an
			// empty one made here would be kept (emptyGroupKeep) and
			// listed, for a member the coordinator does not know.
			return fail(errUnknownMemberID, "")
		}
		g = &cgroup{name: req.Group, members: map[string]*cmember{}}
		c.cgroups[req.Group] = g
	}
	m := g.members[req.MemberID]
	var static *cmember // the member of the instance ID named
	if req.InstanceID != nil {
		static = g.static(*req.InstanceID)
	}
	switch {
	case req.MemberEpoch == 0:
		id := req.MemberID
		if id == "" {
			id = newConsumerMemberID()
		}
		switch {
		case static != nil && static.away:
			if m != nil && m != static {
				g.drop(id)
			}
			m = g.replace(static, id)
		case static != nil && static.id != id:
			return fail(errUnreleasedInstanceID, "instance ID "+*req.InstanceID+" is another member's")
		default:
			if m != nil {
				g.drop(id) // a member that joins again gives up what it had
			}
			m = &cmember{id: id, session: c.s.o.ConsumerSessionTimeout}
			if req.InstanceID != nil {
				m.instanceID = *req.InstanceID
			}
			g.members[id] = m
			g.epoch++
		}
		g.emptySince = time.Time{}
	case req.InstanceID != nil && static == nil:
		// As Kafka's throwIfStaticMemberIsUnknown: a member that joined
		// with another instance ID, or none, is not that instance's.
		return fail(errUnknownMemberID, "instance ID "+*req.InstanceID+" is unknown")
	case static != nil && static.id != req.MemberID:
		return fail(errFencedInstanceID, "instance ID "+*req.InstanceID+" is another member's")
	case m == nil:
		return fail(errUnknownMemberID, "")
	case m.away:
		return fail(errFencedMemberEpoch, "the member left (member epoch -2)")
	case req.MemberEpoch != m.epoch && (req.MemberEpoch != m.prevEpoch || req.Topics == nil):
		return fail(errFencedMemberEpoch, "member epoch "+strconv.Itoa(int(req.MemberEpoch))+", the group has it at "+strconv.Itoa(int(m.epoch)))
	}
	m.lastSeen, m.clientID, m.host = now, h.clientID, remote
	if req.ServerAssignor != nil {
		g.assignor = *req.ServerAssignor
	}
	if req.RebalanceTimeoutMillis != -1 {
		// The member's own, whatever it is but -1 ("unchanged", refused
		// at a join), as Kafka takes it: 0 (or less) drops the member at
		// the coordinator's next tick once it keeps a partition taken
		// from it, as Kafka's timer of that length fences it at once.
		m.rebal = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.SubscribedTopicNames != nil {
		ts := slices.Clone(req.SubscribedTopicNames)
		sort.Strings(ts)
		ts = slices.Compact(ts)
		if !slices.Equal(ts, m.topics) {
			m.topics = ts
			g.epoch++
		}
	}
	if req.SubscribedTopicRegex != nil {
		if (regex == nil) != (m.regex == nil) || (regex != nil && regex.String() != m.regex.String()) {
			m.regex, m.regexSrc = regex, *req.SubscribedTopicRegex
			g.epoch++
		}
	}
	byID := map[[16]byte]string{}
	for _, ti := range infos {
		byID[topicID(ti)] = ti.Name
	}
	if req.Topics != nil {
		owned := map[tpart]bool{}
		for _, t := range req.Topics {
			if name, ok := byID[t.TopicID]; ok {
				for _, p := range t.Partitions {
					owned[tpart{name, p}] = true
				}
			}
		}
		if req.MemberEpoch != m.epoch {
			// The previous epoch: the member missed the answer that
			// moved it on. Accepted only if it owns nothing it was not
			// given, as Kafka does.
			for p := range owned {
				if !m.assigned[p] && !m.releasing[p] {
					return fail(errFencedMemberEpoch, "a previous member epoch with partitions the member does not have")
				}
			}
		}
		for p := range m.releasing {
			if !owned[p] {
				delete(m.releasing, p)
				delete(m.since, p)
			}
		}
		// A full heartbeat (one that names what the member owns) is
		// always answered with its assignment, as Kafka does: the member
		// then learns it again if it missed it.
		m.delivered = false
	}
	g.retarget(infos)
	g.read = read
	for !g.reconcile(m, now, c.commitsSettled(req.Group)) {
		// Partitions for m wait for commits in flight (settle), which
		// only this group's calls wait for.
		if c.settle(ctx, req.Group) {
			continue
		}
		switch {
		case ctx.Err() != nil:
			return fail(coordinatorCode(ctx.Err()), "")
		case c.cgroups[req.Group] != g || g.members[m.id] != m:
			return fail(errUnknownMemberID, "") // dropped meanwhile
		}
	}

	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(m.id), m.epoch
	resp.HeartbeatIntervalMillis = int32(c.s.o.ConsumerHeartbeatInterval.Milliseconds())
	// A heartbeat that read the topics later retargeted the group while
	// this one waited (settle): infos may lack a topic of m's assignment,
	// which m then gets at its next heartbeat.
	if !m.delivered && g.read == read {
		m.delivered = true
		resp.Assignment = assignmentOf(m.assigned, infos)
	}
	return resp
}

// convertEmptyClassic forgets the named classic group, which has no
// members, for a joining KIP-848 member: Kafka converts an empty classic
// group to a consumer group so, and one name is one group's. Its
// committed offsets are the engine's and stay, as does its commit gate,
// which the KIP-848 group waits on before it gives out a partition; the
// member IDs it gave out (MEMBER_ID_REQUIRED) go with it. One not Empty
// yet (its last member's leave gave up waiting for commits in flight,
// and the coordinator's tick would end it) is ended, as forgetAll ends
// the groups it forgets. The caller holds c's lock.
func (c *coordinator) convertEmptyClassic(name string) {
	g := c.groups[name]
	if g == nil {
		return
	}
	g.toEmpty()
	delete(c.groups, name)
}

// readTopics reads the topics the group's members and the request name
// (all of them, with a pattern) and returns them with c locked, or an error
// code and message with c unlocked. The engine's calls do not run under the
// coordinator's lock, so heartbeats of one group read concurrently; a read
// is used only if the group still subscribes to the same names and no read
// begun after it retargeted the group meanwhile, else it is done again.
// Otherwise a heartbeat that read before another member joined (or before a
// topic grew) would retarget the group after that member's heartbeat, with
// the older topics, and take the newer topics' partitions out of the
// members' targets.
func (c *coordinator) readTopics(ctx context.Context, group string, req []string, reqRegex bool) ([]equeue.TopicInfo, uint64, int16, string) {
	const classic = "a classic group of that name has members"
	c.lock()
	for {
		if g := c.groups[group]; g != nil && len(g.members) > 0 {
			c.mu.Unlock()
			return nil, 0, errGroupIDNotFound, classic
		}
		names, anyRegex := c.subscribedNames(group, req, reqRegex)
		c.reads++
		read := c.reads
		c.mu.Unlock()
		infos, err := c.topicInfos(ctx, names, anyRegex)
		if err != nil {
			return nil, 0, coordinatorCode(err), err.Error()
		}
		c.lock()
		if g := c.groups[group]; g != nil && len(g.members) > 0 {
			c.mu.Unlock()
			return nil, 0, errGroupIDNotFound, classic
		}
		again, againRegex := c.subscribedNames(group, req, reqRegex)
		if g := c.cgroups[group]; slices.Equal(again, names) && againRegex == anyRegex && (g == nil || g.read < read) {
			return infos, read, errNone, ""
		}
	}
}

// subscribedNames lists the topics the group's members and the request
// name or hold partitions of, and whether any member subscribes by pattern.
func (c *coordinator) subscribedNames(group string, req []string, reqRegex bool) ([]string, bool) {
	set := map[string]bool{}
	for _, n := range req {
		set[n] = true
	}
	anyRegex := reqRegex
	if g := c.cgroups[group]; g != nil {
		for _, m := range g.members {
			for _, n := range m.topics {
				set[n] = true
			}
			// And the topics of what members hold or are releasing, which
			// they may no longer subscribe to: a full heartbeat naming
			// such a partition by topic ID must still be read as owning it.
			for p := range m.assigned {
				set[p.topic] = true
			}
			for p := range m.releasing {
				set[p.topic] = true
			}
			anyRegex = anyRegex || m.regex != nil
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, anyRegex
}

// topicInfos reads the named topics (all of them when a member subscribes
// by pattern). A topic that does not exist (yet) is left out: its
// subscribers get its partitions once it is created. So is a name no
// topic can have (ErrInvalidName: one Kafka allows, longer than the
// engine's names), which a member may subscribe to as to any other.
func (c *coordinator) topicInfos(ctx context.Context, names []string, all bool) ([]equeue.TopicInfo, error) {
	if all {
		ts, err := c.s.b.Topics(ctx)
		if err != nil {
			return nil, err
		}
		out := ts[:0]
		for _, ti := range ts {
			if !hidden(ti.Name) {
				out = append(out, ti)
			}
		}
		// In name order, as the named path gives them: the layout
		// compared across heartbeats must not change with the order.
		slices.SortFunc(out, func(a, b equeue.TopicInfo) int { return strings.Compare(a.Name, b.Name) })
		return out, nil
	}
	out := make([]equeue.TopicInfo, 0, len(names))
	for _, n := range names {
		if hidden(n) {
			continue
		}
		ti, err := c.s.b.Topic(ctx, n)
		if err != nil {
			if errors.Is(err, equeue.ErrTopicNotFound) || errors.Is(err, equeue.ErrInvalidName) {
				continue
			}
			return nil, err
		}
		out = append(out, ti)
	}
	return out, nil
}

// retarget computes the members' shares again when the group epoch rose
// or the topics' partitions changed.
func (g *cgroup) retarget(infos []equeue.TopicInfo) {
	var b strings.Builder
	parts := map[string]int{}
	g.ids = make(map[string][16]byte, len(infos))
	for _, ti := range infos {
		parts[ti.Name] = len(ti.Queues)
		g.ids[ti.Name] = topicID(ti)
		b.WriteString(ti.Name)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(len(ti.Queues)))
		b.WriteByte(',')
	}
	if layout := b.String(); layout != g.layout {
		g.layout = layout
		g.epoch++
	}
	if g.target != nil && g.targetEpoch == g.epoch {
		return
	}
	ids := slices.Sorted(maps.Keys(g.members))
	g.target = make(map[string]map[tpart]bool, len(ids))
	for _, id := range ids {
		g.target[id] = map[tpart]bool{}
	}
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var subs []string
		for _, id := range ids {
			if g.members[id].subscribes(n) {
				subs = append(subs, id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		total, k := parts[n], len(subs)
		p := 0
		for i, id := range subs {
			share := total / k
			if i < total%k {
				share++
			}
			for range share {
				g.target[id][tpart{n, int32(p)}] = true
				p++
			}
		}
	}
	g.targetEpoch = g.epoch
}

func (m *cmember) subscribes(topic string) bool {
	if _, ok := slices.BinarySearch(m.topics, topic); ok {
		return true
	}
	return m.regex != nil && m.regex.MatchString(topic)
}

// reconcile moves m toward its share: partitions outside it are taken
// away (and wait, releasing, until m reports them released); once it holds
// nothing it must release, m reaches the group's epoch and gets the
// partitions of its share that no other member holds or is releasing. A
// partition that was released may have commits of its previous holder in
// flight: unless settled (the group's commit gate is empty), m gets none
// and reconcile returns false, for the caller to wait for them and call it
// again. m is left as it was then, at the epoch it was last told: the
// client may send again meanwhile (its request timed out), on another
// connection and with that epoch, and the waiting heartbeat may end
// without an answer (the listener closing); the member must not be fenced
// for an epoch no answer gave it.
func (g *cgroup) reconcile(m *cmember, now time.Time, settled bool) bool {
	target := g.target[m.id]
	for p := range m.assigned {
		if !target[p] {
			delete(m.assigned, p)
			if m.releasing == nil {
				m.releasing = map[tpart]bool{}
			}
			if len(m.releasing) == 0 {
				m.releaseSince = now
			}
			m.releasing[p] = true
			m.delivered = false
		}
	}
	if len(m.releasing) > 0 {
		return true
	}
	for p := range target {
		if m.assigned[p] || g.held(p, m.id) {
			continue
		}
		if !settled {
			return false // before any change to m
		}
		if m.assigned == nil {
			m.assigned = map[tpart]bool{}
		}
		if m.since == nil {
			m.since = map[tpart]int32{}
		}
		m.assigned[p] = true
		m.since[p] = g.targetEpoch // the epoch m is at below
		m.delivered = false
	}
	if m.epoch != g.targetEpoch {
		m.prevEpoch, m.epoch = m.epoch, g.targetEpoch
	}
	return true
}

// held reports whether a member other than except has p or is releasing it.
func (g *cgroup) held(p tpart, except string) bool {
	for id, o := range g.members {
		if id != except && (o.assigned[p] || o.releasing[p]) {
			return true
		}
	}
	return false
}

// drop removes a member (it left, or its session or release time ran
// out): its partitions are free at once, for members that reconcile once
// its commits in flight were stored.
func (g *cgroup) drop(id string) {
	delete(g.members, id)
	g.epoch++
}

// expire drops members silent for their session, and members that kept a
// partition taken from them for longer than their rebalance timeout.
func (g *cgroup) expire(now time.Time) []string {
	var gone []string
	for id, m := range g.members {
		if now.Sub(m.lastSeen) > m.session || (len(m.releasing) > 0 && now.Sub(m.releaseSince) > m.rebal) {
			gone = append(gone, id)
		}
	}
	for _, id := range gone {
		g.drop(id)
	}
	return gone
}

func assignmentOf(parts map[tpart]bool, infos []equeue.TopicInfo) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	byTopic := map[string][]int32{}
	for p := range parts {
		byTopic[p.topic] = append(byTopic[p.topic], p.part)
	}
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, ti := range infos {
		ps, ok := byTopic[ti.Name]
		if !ok {
			continue
		}
		slices.Sort(ps)
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID, t.Partitions = topicID(ti), ps
		a.Topics = append(a.Topics, t)
	}
	return &a
}

// newConsumerMemberID makes a member ID for a v0 member, which leaves it
// to the coordinator: 22 characters of base64, as a UUID's.
func newConsumerMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// describeConsumer serves ConsumerGroupDescribe: each KIP-848 group's
// epochs and members, with what each has and what it is to have. A group
// whose last member left is described Empty while the coordinator keeps
// it (emptyGroupKeep), as Kafka describes it; a name without a KIP-848
// group (none, a classic one, or one forgotten) is GROUP_ID_NOT_FOUND.
func (c *coordinator) describeConsumer(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	c.lock()
	defer c.mu.Unlock()
	for _, name := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = name
		g := c.cgroups[name]
		if g == nil {
			rg.ErrorCode = errGroupIDNotFound
			rg.ErrorMessage = kmsg.StringPtr("no KIP-848 group of that name")
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.Epoch, rg.AssignmentEpoch = g.state(), g.epoch, g.targetEpoch
		rg.AssignorName = cmp.Or(g.assignor, assignorUniform)
		ids := slices.Sorted(maps.Keys(g.members))
		for _, id := range ids {
			m := g.members[id]
			rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = id, m.epoch, m.clientID, m.host
			if m.instanceID != "" {
				rm.InstanceID = kmsg.StringPtr(m.instanceID)
			}
			if m.away {
				rm.MemberEpoch = leaveStaticEpoch
			}
			rm.SubscribedTopics = slices.Clone(m.topics)
			if m.regex != nil {
				rm.SubscribedTopicRegex = kmsg.StringPtr(m.regexSrc)
			}
			rm.Assignment = g.describeParts(m.assigned)
			rm.TargetAssignment = g.describeParts(g.target[id])
			rm.MemberType = 1
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (g *cgroup) describeParts(parts map[tpart]bool) kmsg.Assignment {
	byTopic := map[string][]int32{}
	for p := range parts {
		byTopic[p.topic] = append(byTopic[p.topic], p.part)
	}
	names := make([]string, 0, len(byTopic))
	for n := range byTopic {
		names = append(names, n)
	}
	sort.Strings(names)
	var a kmsg.Assignment
	for _, n := range names {
		ps := byTopic[n]
		slices.Sort(ps)
		a.TopicPartitions = append(a.TopicPartitions, kmsg.AssignmentTopicPartition{TopicID: g.ids[n], Topic: n, Partitions: ps})
	}
	return a
}

// blank reports whether s is empty once the characters up to the space
// (U+0020: spaces and control characters) are trimmed from its ends, as
// Kafka's coordinator trims a KIP-848 heartbeat's member, instance and
// rack IDs (Java's String.trim) before refusing an empty one.
func blank(s string) bool {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }) == ""
}

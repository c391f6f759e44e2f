package kafka

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// offsetCommit stores a group's offsets in the engine, beside native groups'.
// A member of the current generation may commit while the group is Stable
// or PreparingRebalance (a consumer commits what it processed when a
// rebalance begins), not while it awaits the leader's SyncGroup
// (REBALANCE_IN_PROGRESS, as Kafka answers); a commit without a
// generation (-1) is a standalone consumer's, accepted while the group has
// no members. An offset that is negative or past its partition's end is
// refused with OFFSET_OUT_OF_RANGE (the request's other partitions are
// stored). A store failure, or a node that stopped leading, is answered
// NOT_COORDINATOR (coordinatorCode). The commit metadata string is not
// kept. A commit accepted is stored before its group's partitions change
// owners (commitGate). A commit without a generation to the name of a
// native consumer group is refused with GROUP_AUTHORIZATION_FAILED, as
// joins are (nativeGroup). A commit with a generation to a group the
// listener holds no member of (none of that name, or one it forgot) gets
// UNKNOWN_MEMBER_ID, as from Kafka for a group it keeps without that
// member; Kafka answers ILLEGAL_GENERATION to one of a name no group has,
// which clients handle alike, or (the Java consumer, which keeps its
// member ID then) with one more failed join. OffsetCommit v10 (KIP-848)
// names each topic by its ID, as Metadata gives it (topicID): an ID no
// topic has now gets UNKNOWN_TOPIC_ID on each of its partitions, and the
// answer names each topic by the ID it was asked with.
func (c *coordinator) offsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := kmsg.NewPtrOffsetCommitResponse()
	code, held, gate := c.checkCommitter(ctx, req)
	if gate != nil {
		defer gate.leave()
	}
	switch {
	case code != errNone:
	case !c.s.validGroup(req.Group):
		code = errInvalidGroupID
	case req.Generation < 0 && c.nativeGroup(ctx, req.Group):
		// A tool's commit (kafka-consumer-groups --reset-offsets, or a
		// client assigning its partitions itself) would move a native
		// group's offsets: its joins are refused so (nativeGroup).
		code = errGroupAuthorizationFailed
	}
	var byID map[[16]byte]equeue.TopicInfo
	var idErr error
	if code == errNone && req.GetVersion() >= 10 {
		// v10 names each topic by its ID (as Metadata gives it), not
		// by name.
		ids := make([][16]byte, 0, len(req.Topics))
		for _, t := range req.Topics {
			ids = append(ids, t.TopicID)
		}
		byID, idErr = c.s.topicsByID(ctx, ids)
	}
	offsets := map[equeue.QueueRef]int64{}
	codes := make([][]int16, len(req.Topics))
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
		names[i] = t.Topic
		var ti equeue.TopicInfo
		terr := equeue.ErrTopicNotFound
		switch {
		case code != errNone:
		case req.GetVersion() >= 10:
			terr = idErr
			if idErr == nil {
				var ok bool
				if ti, ok = byID[t.TopicID]; ok {
					names[i], terr = ti.Name, nil
				} else {
					// No topic has it: one that never was, or one
					// deleted (perhaps created again, with another ID).
					terr = errNoTopicWithID
				}
			}
		case !hidden(t.Topic):
			ti, terr = c.s.b.Topic(ctx, t.Topic)
		}
		for j, p := range t.Partitions {
			switch {
			case code != errNone:
				codes[i][j] = code
			case terr != nil:
				codes[i][j] = coordinatorCode(terr)
			case p.Partition < 0 || int(p.Partition) >= len(ti.Queues):
				codes[i][j] = errUnknownTopicOrPartition
			case p.Offset < 0 || p.Offset > ti.Queues[p.Partition].MaxOffset:
				// Past the end it would start the group's next consumer
				// at the end as it is then (OFFSET_OUT_OF_RANGE and its
				// reset), past the records produced meanwhile.
				codes[i][j] = errOffsetOutOfRange
			case held != nil && !held[tpart{names[i], p.Partition}]:
				codes[i][j] = errStaleMemberEpoch // not its partition (any more)
			default:
				offsets[equeue.QueueRef{Topic: names[i], Queue: int(p.Partition)}] = p.Offset
			}
		}
	}
	var cerr int16
	if len(offsets) > 0 {
		if err := c.s.b.CommitGroupOffsets(ctx, req.Group, offsets); err != nil {
			c.s.log.Warn("kafka: commit offsets", "group", req.Group, "err", err)
			cerr = coordinatorCode(err)
			switch {
			case errors.Is(err, equeue.ErrFenced):
				cerr = errGroupAuthorizationFailed // a native group of that name
			case errors.Is(err, equeue.ErrInvalidArgument):
				cerr = errOffsetOutOfRange // past the end of a queue the topic has anew
			}
		}
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = names[i], t.TopicID // v10 answers by ID
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			if rp.ErrorCode == errNone {
				rp.ErrorCode = cerr
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// checkCommitter says whether the request's member may commit, and for a
// member of a KIP-848 consumer group the partitions it holds (nil: any):
// such a member commits with its member epoch as the generation, and only
// partitions it has or is releasing, and was given at that epoch or
// before (one given later may have been another member's in between, as
// Kafka's per-partition epoch check has it). OffsetCommit v9 (KIP-848)
// and v10 are the versions such members commit with, the generation field
// holding the member epoch; at them a classic group's commit is checked as
// at v8.
// A KIP-848 member's commit below v9 is refused with UNSUPPORTED_VERSION,
// as Kafka refuses it: those versions carry no member epoch, so the commit
// could not be fenced (a member ID the group does not know is still
// UNKNOWN_MEMBER_ID, Kafka looking the member up first). A commit it
// accepts has entered the group's gate: the caller leaves it once the
// commit's store write returned. While the gate is shut (a change of
// owners waits for the commits in it), the commit waits, without the
// coordinator's lock, and is checked again once it reopens.
func (c *coordinator) checkCommitter(ctx context.Context, req *kmsg.OffsetCommitRequest) (int16, map[tpart]bool, *commitGate) {
	for {
		c.lock()
		code, held, gate, shut := c.admitCommitter(req)
		c.mu.Unlock()
		if shut == nil {
			return code, held, gate
		}
		select {
		case <-shut:
		case <-ctx.Done():
			return coordinatorCode(ctx.Err()), nil, nil
		}
	}
}

// admitCommitter is checkCommitter's check, under the coordinator's lock;
// it returns a channel to wait on if the group's gate is shut.
func (c *coordinator) admitCommitter(req *kmsg.OffsetCommitRequest) (int16, map[tpart]bool, *commitGate, <-chan struct{}) {
	cg := c.cgroups[req.Group]
	g := c.groups[req.Group]
	if req.Generation < 0 {
		// A group with no members only stores offsets: anyone commits to
		// it, whatever member ID it gives (as Kafka has it).
		if (g == nil || len(g.members) == 0) && (cg == nil || len(cg.members) == 0) {
			// Stored before a first generation begins, also of a group
			// that a join makes only now.
			return c.enterGate(req.Group, nil)
		}
		if req.MemberID == "" {
			// Only members commit to a group that has some: Kafka answers
			// a commit naming no member with UNKNOWN_MEMBER_ID.
			return errUnknownMemberID, nil, nil, nil
		}
	}
	if cg != nil && len(cg.members) > 0 {
		m := cg.members[req.MemberID]
		switch {
		case m == nil:
			return errUnknownMemberID, nil, nil, nil
		case req.GetVersion() < 9:
			// The generation of an older version is no member epoch:
			// Kafka refuses it so, before it compares epochs.
			return errUnsupportedVersion, nil, nil, nil
		case m.away:
			// A static member that left for a while (member epoch -2)
			// keeps its partitions for its instance, whose next member
			// commits them: Kafka refuses its commits, its epoch being -2.
			return errStaleMemberEpoch, nil, nil, nil
		case req.Generation > m.epoch:
			// An epoch the group never gave it (Kafka answers the same):
			// the member must rejoin. An older epoch commits what the
			// member still holds or is releasing, and held since then.
			return errFencedMemberEpoch, nil, nil, nil
		}
		held := map[tpart]bool{}
		for p := range m.assigned {
			held[p] = m.since[p] <= req.Generation
		}
		for p := range m.releasing {
			held[p] = m.since[p] <= req.Generation
		}
		return c.enterGate(req.Group, held)
	}
	_, m, code := c.member(req.Group, req.MemberID, req.InstanceID, req.Generation)
	if code != errNone {
		return code, nil, nil, nil
	}
	m.lastSeen = time.Now()
	if g.state == stateCompleting {
		// The member has its generation's JoinGroup answer but not yet
		// its assignment: Kafka refuses its commit so, and the member
		// commits again once it synced.
		return errRebalanceInProgress, nil, nil, nil
	}
	return c.enterGate(req.Group, nil)
}

// enterGate enters an accepted commit into its group's gate, as
// admitCommitter returns it: with the channel to wait on instead if the
// gate is shut.
func (c *coordinator) enterGate(group string, held map[tpart]bool) (int16, map[tpart]bool, *commitGate, <-chan struct{}) {
	gate := c.gate(group)
	if shut := gate.enter(); shut != nil {
		return errNone, nil, nil, shut
	}
	return errNone, held, gate, nil
}

// offsetFetch answers the committed offsets of the groups asked for. From
// v9 (KIP-848) each group of the request names the member asking and its
// member epoch, checked as Kafka checks them (checkFetcher): a refusal is
// the group's error code, with no offsets. v10 names each topic by its ID,
// as Metadata gives it (topicsByID), and the answer names each by the ID
// it was asked with: an ID no topic has now gets UNKNOWN_TOPIC_ID and
// offset -1 on each of its partitions, as from Kafka. A fetch of all the
// group's offsets at v10 names their topics by their IDs, leaving out
// those of topics that no longer are (Kafka knows no ID for them).
func (c *coordinator) offsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	if req.GetVersion() >= 8 {
		for _, rg := range req.Groups {
			resp.Groups = append(resp.Groups, c.fetchGroup(ctx, req.GetVersion(), rg))
		}
		return resp
	}
	topics := req.Topics
	if req.GetVersion() < 2 && topics == nil {
		topics = []kmsg.OffsetFetchRequestTopic{}
	}
	resp.Topics, resp.ErrorCode = c.fetchGroupOffsets(ctx, req.Group, topics)
	if req.GetVersion() < 2 && resp.ErrorCode != errNone {
		resp.Topics = partitionErrors(topics, resp.ErrorCode)
	}
	return resp
}

// fetchGroup answers one group of an OffsetFetch v8+ at version v.
func (c *coordinator) fetchGroup(ctx context.Context, v int16, rg kmsg.OffsetFetchRequestGroup) kmsg.OffsetFetchResponseGroup {
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group = rg.Group
	if v >= 9 {
		if g.ErrorCode = c.checkFetcher(rg.Group, rg.MemberID, rg.MemberEpoch); g.ErrorCode != errNone {
			return g
		}
	}
	var topics []kmsg.OffsetFetchRequestTopic
	known := make([]bool, len(rg.Topics)) // v10: whether a topic has the ID asked for
	if rg.Topics != nil {
		var byID map[[16]byte]equeue.TopicInfo
		if v >= 10 {
			ids := make([][16]byte, 0, len(rg.Topics))
			for _, t := range rg.Topics {
				ids = append(ids, t.TopicID)
			}
			var err error
			if byID, err = c.s.topicsByID(ctx, ids); err != nil {
				g.ErrorCode = coordinatorCode(err)
				return g
			}
		}
		topics = make([]kmsg.OffsetFetchRequestTopic, 0, len(rg.Topics))
		for i, t := range rg.Topics {
			name := t.Topic
			if v >= 10 {
				var ti equeue.TopicInfo
				ti, known[i] = byID[t.TopicID]
				name = ti.Name
			}
			topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: name, Partitions: t.Partitions})
		}
	}
	rts, code := c.fetchGroupOffsets(ctx, rg.Group, topics)
	g.ErrorCode = code
	var ids map[string][16]byte
	if v >= 10 && rg.Topics == nil && code == errNone {
		names := make([]string, 0, len(rts))
		for _, rt := range rts {
			names = append(names, rt.Topic)
		}
		var err error
		if ids, err = c.s.idsOfTopics(ctx, names); err != nil {
			g.ErrorCode = coordinatorCode(err)
			return g
		}
	}
	for i, rt := range rts {
		gt := kmsg.NewOffsetFetchResponseGroupTopic()
		gt.Topic = rt.Topic
		unknown := false
		switch {
		case v < 10:
		case rg.Topics != nil:
			gt.TopicID, unknown = rg.Topics[i].TopicID, !known[i]
		default:
			var ok bool
			if gt.TopicID, ok = ids[rt.Topic]; !ok {
				continue // a topic deleted since: it has no ID
			}
		}
		for _, p := range rt.Partitions {
			gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			if unknown {
				gp.Offset, gp.ErrorCode = -1, errUnknownTopicID
			}
			gt.Partitions = append(gt.Partitions, gp)
		}
		g.Topics = append(g.Topics, gt)
	}
	return g
}

// partitionErrors answers every partition of topics with code and offset
// -1: how OffsetFetch v0 and v1, which have no group error code, give a
// group error, as Kafka does. An answer without the partitions would
// read as "nothing committed", and clients would start them from their
// reset offset (segmentio/kafka-go, whose groups fetch with v1, does).
func partitionErrors(topics []kmsg.OffsetFetchRequestTopic, code int16) []kmsg.OffsetFetchResponseTopic {
	empty := ""
	out := make([]kmsg.OffsetFetchResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.Metadata, rp.ErrorCode = p, -1, &empty, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// fetchGroupOffsets answers the committed offsets of the named partitions,
// or of every partition the group has one for when topics is nil; -1 where
// none is committed.
func (c *coordinator) fetchGroupOffsets(ctx context.Context, group string, topics []kmsg.OffsetFetchRequestTopic) ([]kmsg.OffsetFetchResponseTopic, int16) {
	if !c.s.validGroup(group) {
		return nil, errInvalidGroupID
	}
	offs, err := c.s.b.GroupOffsets(ctx, group)
	if err != nil {
		return nil, coordinatorCode(err)
	}
	if topics == nil {
		byTopic := map[string][]int32{}
		for ref := range offs {
			if !hidden(ref.Topic) {
				byTopic[ref.Topic] = append(byTopic[ref.Topic], int32(ref.Queue))
			}
		}
		for t, ps := range byTopic {
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: t, Partitions: ps})
		}
		sort.Slice(topics, func(i, j int) bool { return topics[i].Topic < topics[j].Topic })
	}
	empty := ""
	out := make([]kmsg.OffsetFetchResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, -1, -1, &empty
			if off, ok := offs[equeue.QueueRef{Topic: t.Topic, Queue: int(p)}]; ok {
				rp.Offset = off
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out, errNone
}

package equeue

import (
	"context"
	"errors"
	"slices"
)

// GroupInfo describes a consumer group for operators.
type GroupInfo struct {
	// Name is the group name.
	Name string
	// Model is Clustering or Broadcasting, as the member that created the
	// group asked.
	Model MessageModel
	// Subscriptions are the topics and tag filters the group consumes; every
	// member must join with the same ones (ErrSubscriptionMismatch).
	Subscriptions []Subscription
	// Strategy is the allocation strategy dividing the queues among members
	// ("average", "average-by-circle" or "consistent-hash").
	Strategy string
	// Epoch rises on every membership or queue-count change; pulls and
	// commits under an older epoch are refused (ErrFenced).
	Epoch int64
	// Members lists the live members, sorted by ID; empty when none is
	// connected.
	Members []MemberInfo
	// Queues lists each subscribed queue with its owner (clustering), committed
	// offset, max offset and lag. In a broadcasting group there is one row per
	// member and queue (QueueLags gives the group's lag per queue).
	Queues []GroupQueueInfo
}

// MemberInfo is one live member and the queues it owns.
type MemberInfo struct {
	// ID is the member ID (ConsumerOptions.ID).
	ID string
	// Queues are the queues granted to the member now, those it is
	// handing over to another member included (each queue is listed with
	// the one member that holds it, as GroupQueueInfo.Owner).
	Queues []QueueRef
}

// GroupQueueInfo is one queue's progress in a group.
type GroupQueueInfo struct {
	QueueRef
	// Owner is the member that holds the queue ("" when none); in a
	// broadcasting group, the member whose offset this row shows.
	Owner string
	// Committed is the next offset to consume; -1 when the group has none yet.
	Committed int64
	// MaxOffset is one past the queue's last message.
	MaxOffset int64
	// Lag is MaxOffset minus Committed (from the queue's min offset when
	// the committed one is below it). When none is committed yet, it counts
	// from where the group will start, as its ConsumeFrom says: every stored
	// message from the earliest (the group's own retry topic always), none
	// from the latest, those stored from its FromTime with a timestamp (every
	// stored message if the store cannot be read to find that start).
	// Offsets known to be lost to store damage (Stats.CorruptRecords) hold
	// no message and are not counted.
	Lag int64
}

// Groups lists every consumer group the engine knows, sorted by name. A
// group deleted while the list is made is left out.
func (e *Engine) Groups(ctx context.Context) ([]GroupInfo, error) {
	return e.listGroups(ctx, nil)
}

// listGroups lists the groups whose name keep accepts (every one when
// keep is nil), sorted by name: only those are described.
func (e *Engine) listGroups(ctx context.Context, keep func(name string) bool) ([]GroupInfo, error) {
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer e.leave()
	e.groups.mu.Lock()
	var names []string
	if keep == nil {
		names = make([]string, 0, len(e.groups.groups))
	}
	for n := range e.groups.groups {
		if keep == nil || keep(n) {
			names = append(names, n)
		}
	}
	e.groups.mu.Unlock()
	slices.Sort(names)
	out := make([]GroupInfo, 0, len(names))
	for _, n := range names {
		gi, err := e.groupInfo(n)
		if errors.Is(err, ErrGroupNotFound) {
			continue // deleted since the names were listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, gi)
	}
	return out, nil
}

// Group describes one consumer group. A bad group name gets
// ErrInvalidName, an unknown group ErrGroupNotFound.
func (e *Engine) Group(ctx context.Context, name string) (GroupInfo, error) {
	if err := e.enter(ctx); err != nil {
		return GroupInfo{}, err
	}
	defer e.leave()
	if err := ValidateName(name); err != nil { // whether or not such a group exists
		return GroupInfo{}, err
	}
	return e.groupInfo(name)
}

// held returns, for each member in ids (sorted), the queues it holds a
// grant of, sorted: in a clustering group also those it is handing over
// (Assignment.Revoking), which are its own until it releases them. It
// makes one pass over the group's queues for all members, not one per
// member. g.mu must be held.
func (g *group) held(ids []string) [][]QueueRef {
	out := make([][]QueueRef, len(ids))
	if g.model == Broadcasting {
		if len(g.queues) > 0 {
			for i := range ids {
				out[i] = slices.Clone(g.queues)
				sortRefs(out[i])
			}
		}
		return out
	}
	for _, q := range g.queues {
		if o, ok := g.owners[q]; ok {
			if i, found := slices.BinarySearch(ids, o.member); found {
				out[i] = append(out[i], q)
			}
		}
	}
	for _, qs := range out {
		sortRefs(qs)
	}
	return out
}

func (e *Engine) groupInfo(name string) (GroupInfo, error) {
	g, err := e.groups.group(name)
	if err != nil {
		return GroupInfo{}, err
	}
	// A group whose lock is held across a store write (a reset, its
	// deletion, its first join) is described as it was frozen for the
	// write (groupfreeze.go): listings of every group do not wait for it.
	frozen := g.readLock()
	gi, starts := e.readGroupInfo(g)
	at := g.fromTime
	g.readUnlock(frozen)
	// Where a group without an offset starts from a time is searched for
	// in the store: not under g.mu, which its members' commits and pulls
	// take (metrics scrapes list every group's lag).
	e.lagsFromStart(gi.Queues, starts, at)
	return gi, nil
}

// readGroupInfo describes g as of now, but for the lag of its rows without
// an offset: starts lists those rows, for lagsFromStart. g.mu must be held,
// or g frozen (readLock).
func (e *Engine) readGroupInfo(g *group) (GroupInfo, []startLag) {
	var starts []startLag
	gi := GroupInfo{Name: g.name, Model: g.model, Subscriptions: slices.Clone(g.subs), Strategy: g.strategy.Name(), Epoch: g.epoch}
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) > 0 {
		gi.Members = make([]MemberInfo, 0, len(ids))
	}
	for i, qs := range g.held(ids) {
		gi.Members = append(gi.Members, MemberInfo{ID: ids[i], Queues: qs})
	}
	queues := e.groups.queuesOf(g)
	if len(queues) == 0 {
		queues = g.offsetQueues() // a group coordinated outside the engine (extoffsets.go)
	}
	row := func(q QueueRef, owner string, k offsetKey) {
		r := GroupQueueInfo{QueueRef: q, Owner: owner, Committed: -1}
		if qq, err := e.queueOf(q); err == nil {
			min, next, lost := qq.extent()
			r.MaxOffset = next
			if off, ok := g.offsets[k]; ok {
				r.Committed = off
				r.Lag = lost.held(max(off, min), next)
			} else if off, ok := g.resolvedStart(k); ok {
				// The start a fetch resolved but could not store yet:
				// the group starts there.
				r.Lag = lost.held(max(off, min), next)
			} else {
				starts = append(starts, startLag{row: len(gi.Queues), min: min, lost: lost, from: g.startFrom(q.Topic)})
			}
		}
		gi.Queues = append(gi.Queues, r)
	}
	if g.model == Broadcasting {
		members := map[string]bool{}
		for k := range g.offsets {
			if g.ofModel(k) {
				members[k.member] = true
			}
		}
		for id := range g.members {
			members[id] = true
		}
		mids := make([]string, 0, len(members))
		for id := range members {
			mids = append(mids, id)
		}
		slices.Sort(mids)
		for _, id := range mids {
			for _, q := range queues {
				row(q, id, offsetKey{member: id, q: q})
			}
		}
		return gi, starts
	}
	for _, q := range queues {
		row(q, g.owners[q].member, offsetKey{q: q})
	}
	return gi, starts
}

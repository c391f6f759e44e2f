package kafka

import "time"

// Static members of KIP-848 groups: a member that joins with a
// group.instance.id may leave for a while (member epoch -2), for a
// restart: it keeps its partitions, which no other member gets, until its
// session runs out, and a member that joins with the same instance ID
// (under a new member ID) takes its place, its partitions and its member
// epoch at once, without a change of the group's epoch. As in Kafka, an
// instance ID is one member's at a time: a join naming one whose member
// has not left so gets UNRELEASED_INSTANCE_ID, a heartbeat or leave of
// a member another took the place of FENCED_INSTANCE_ID, and one naming
// an instance the group has no member of UNKNOWN_MEMBER_ID. Unlike
// Kafka's coordinator as released, a join under the member ID that holds
// the instance is that member joining again, as a dynamic member would:
// clients send it after a lost answer or FENCED_MEMBER_EPOCH (franz-go,
// the Java consumer), and UNRELEASED_INSTANCE_ID is fatal to them (to
// franz-go after three tries); apache/kafka#23542 proposes the same for
// Kafka. A member away commits nothing (STALE_MEMBER_EPOCH,
// admitCommitter): the member that takes its place commits its
// partitions.

// Codes of KIP-848 static membership.
const (
	errUnreleasedInstanceID int16 = 111
	leaveStaticEpoch        int32 = -2
)

// static returns the member of the group with that instance ID, or nil.
func (g *cgroup) static(instance string) *cmember {
	for _, m := range g.members {
		if m.instanceID == instance {
			return m
		}
	}
	return nil
}

// staticLeave serves a leave (member epoch -1 or -2) that names an
// instance ID, as Kafka serves it: the instance's member must be the one
// leaving (else FENCED_INSTANCE_ID, or UNKNOWN_MEMBER_ID if the group has
// no member of that instance). With -2 it is kept, as away, until its
// session (counted from now) runs out; with -1 it is dropped. It returns
// the error code of the answer.
func (g *cgroup) staticLeave(id, instance string, epoch int32, now time.Time) int16 {
	m := g.static(instance)
	switch {
	case m == nil:
		return errUnknownMemberID
	case m.id != id:
		return errFencedInstanceID
	case epoch == leaveStaticEpoch:
		m.away, m.lastSeen = true, now
	default:
		g.drop(id)
	}
	return errNone
}

// replace makes a member of ID id take the place of old, a static member
// that left for a while: its partitions, the ones it is releasing, its
// target and epochs become the new member's, which is told them in the
// answer to its join.
func (g *cgroup) replace(old *cmember, id string) *cmember {
	m := *old
	m.id, m.away, m.delivered = id, false, false
	delete(g.members, old.id)
	g.members[id] = &m
	if t, ok := g.target[old.id]; ok {
		delete(g.target, old.id)
		g.target[id] = t
	}
	return &m
}

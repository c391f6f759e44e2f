package kafka

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Static members of classic groups (KIP-345): a member that joins with a
// group.instance.id is its instance's member, under an ID that starts
// with the instance ID, as Kafka makes it (franz-go tells a restarted
// leader by it before JoinGroup v9). As in Kafka's coordinator:
//
//   - A join naming the instance without a member ID (the instance
//     restarted) takes the place of the instance's member under a new
//     member ID, with its assignment and, if it led, the leadership. In a
//     Stable group whose protocol that does not change it is answered at
//     once, in the current generation, with no rebalance; its sync gets
//     the assignment the instance had. A restarted leader is told it
//     leads, with the members and SkipAssignment, from v9 (KIP-814), and
//     is given the former leader ID and no members before. Otherwise the
//     join takes part in a rebalance, as any join.
//   - The member replaced is fenced: its waiting join or sync, and its
//     later requests that name the instance, get FENCED_INSTANCE_ID (it
//     is gone: without the instance, UNKNOWN_MEMBER_ID). A request naming
//     an instance the group has no member of gets UNKNOWN_MEMBER_ID.
//   - A static member that does not join again in a rebalance is kept,
//     in the leader's list of members, until its session runs out, so a
//     restart within it moves no partitions; it expires like any member.
//   - A LeaveGroup (v3+) member named by its instance ID alone removes
//     the instance's member.

// staticMember returns the member of g with that instance ID, or nil.
func (g *kgroup) staticMember(instance string) *kmember {
	for _, m := range g.members {
		if m.instanceID != nil && *m.instanceID == instance {
			return m
		}
	}
	return nil
}

// checkInstance checks a request of member id that names instance (nil:
// none, which is not checked) as Kafka's coordinator does: the group must
// have a member of that instance (else UNKNOWN_MEMBER_ID), and it must be
// id (else FENCED_INSTANCE_ID).
func (g *kgroup) checkInstance(id string, instance *string) int16 {
	if instance == nil {
		return errNone
	}
	m := g.staticMember(*instance)
	switch {
	case m == nil:
		return errUnknownMemberID
	case m.id != id:
		return errFencedInstanceID
	}
	return errNone
}

// replaceStatic makes a member of ID id take the place of old, the
// member of an instance that joins again without a member ID: old's
// instance, assignment and leadership become the new member's, and old
// is fenced (its waiting join or sync ends with FENCED_INSTANCE_ID).
func (g *kgroup) replaceStatic(old *kmember, id string) *kmember {
	m := newKmember(id)
	m.instanceID, m.assignment = old.instanceID, old.assignment
	old.fenced = true
	close(old.gone)
	delete(g.members, old.id)
	g.members[id] = m
	if g.leader == old.id {
		g.leader = id
	}
	return m
}

// staticRejoin answers at once, with no rebalance, the join of m, which
// took the place of its instance's member in a Stable group whose
// protocol it does not change; it returns nil if it does, for a rebalance.
// formerLeader is the group's leader before m took its place.
func (g *kgroup) staticRejoin(m *kmember, formerLeader string, version int16) *kmsg.JoinGroupResponse {
	if g.state != stateStable || g.leader == "" {
		return nil
	}
	ids := slices.Sorted(maps.Keys(g.members))
	if g.chooseProtocol(ids) != g.protocol {
		return nil
	}
	r := kmsg.NewPtrJoinGroupResponse()
	r.Generation, r.MemberID, r.LeaderID = g.generation, m.id, formerLeader
	r.Protocol, r.ProtocolType = kmsg.StringPtr(g.protocol), kmsg.StringPtr(g.protocolType)
	if version >= 9 && g.leader == m.id {
		r.LeaderID, r.SkipAssignment, r.Members = m.id, true, g.memberList(ids)
	}
	return r
}

// goneCode is the error code for member m that is no longer the group's:
// FENCED_INSTANCE_ID if another member took its place, else
// UNKNOWN_MEMBER_ID.
func (m *kmember) goneCode() int16 {
	if m.fenced {
		return errFencedInstanceID
	}
	return errUnknownMemberID
}

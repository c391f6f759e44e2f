package kafka

import (
	"bytes"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A member of a classic group that joins again under its member ID while
// the group is Stable (a client that lost its join answer, or one that
// rejoins after a commit error) is answered as Kafka's coordinator
// answers it: a member other than the leader whose protocols and their
// metadata are those it joined with gets the current generation at once,
// with the leader's ID and no members, and syncs to the assignment it
// has; no rebalance begins. The leader joining again (to have the
// partitions assigned anew, as when a subscribed topic grows), or a
// member whose metadata changed, begins one.
//
// While the group is CompletingRebalance (the generation's joins were
// answered, the leader's assignment has not arrived) a member with the
// same protocols and metadata, the leader included, gets the current
// generation at once too, as in Kafka: it lost its join answer, and the
// generation it missed is the one it asks for. The leader's answer lists
// the members again, as its first did. Changed metadata begins a
// rebalance.

// matches reports whether ps are the protocols m joined with: the same
// names with the same metadata, in the same order, as Kafka compares
// them.
func (m *kmember) matches(ps []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// rejoinInPlace answers at once the join of m, a member of g that joins
// again under its member ID with protocols ps, if ps match m's and g is
// CompletingRebalance, or Stable with m not its leader; it returns nil if
// the join begins a rebalance.
func (g *kgroup) rejoinInPlace(m *kmember, ps []kmsg.JoinGroupRequestProtocol) *kmsg.JoinGroupResponse {
	completing := g.state == stateCompleting
	if (!completing && (g.state != stateStable || g.leader == m.id)) || !m.matches(ps) {
		return nil
	}
	r := kmsg.NewPtrJoinGroupResponse()
	r.Generation, r.MemberID, r.LeaderID = g.generation, m.id, g.leader
	// Copies, as in complete: the answer is encoded after the lock is
	// released.
	r.Protocol, r.ProtocolType = kmsg.StringPtr(g.protocol), kmsg.StringPtr(g.protocolType)
	if completing && g.leader == m.id {
		r.Members = g.memberList(slices.Sorted(maps.Keys(g.members)))
	}
	// An answer of this generation that its first join, gone with its
	// connection, left unread is this one.
	m.join = nil
	return r
}

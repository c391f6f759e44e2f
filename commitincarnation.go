package equeue

import "fmt"

// sameIncarnation refuses (ErrNotMember) a commit of req.Member that
// names another incarnation than the live member's, or whose member is
// gone since CommitOffsets found it. A broadcasting member's grants stay
// valid across its incarnations (they carry the group's reset epoch, not
// the member's), so without it the late commit of an incarnation that
// expired or left (a cut close done again by Engine.Close, say) would
// move the offsets of the one that took its ID back. A commit naming no
// incarnation, or a member that joined without one, is not checked.
// g.mu must be held.
func (g *group) sameIncarnation(req *CommitRequest) error {
	m := g.members[req.Member]
	if m == nil {
		return fmt.Errorf("%w: %q in group %q", ErrNotMember, req.Member, g.name)
	}
	if req.Incarnation != "" && m.incarnation != "" && m.incarnation != req.Incarnation {
		return fmt.Errorf("%w: %q in group %q belongs to another incarnation", ErrNotMember, req.Member, g.name)
	}
	return nil
}

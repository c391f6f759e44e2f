package equeue

import "github.com/equeue-go/equeue/store"

// resetMarks returns the deletions of the send-back marks of keys that a
// reset's own write carries, and each key's offsetSet (moving it back to
// targets[k.q]) with the marks that write has no room for in later, for
// deleteMarksBeforeMovingBack to delete before it. g.mu must be held.
//
// The write makes room first for the marks live now, at or above the
// key's committed offset (all of them for a key with none stored): they
// answer while the offsets stay, so deleted before a write the store then
// refuses, they would be gone though the reset did not happen, and a
// failure of their messages, delivered again, would be sent back twice.
// The dead ones, below it, answer for nothing either way: those go first
// in the writes before. Only when the live marks alone overflow the write
// (more than markDeletesPerWrite of them) are some deleted before it.
func (g *group) resetMarks(keys []offsetKey, targets map[QueueRef]int64) ([]store.MetaOp, []offsetSet) {
	type split struct{ live, dead []int64 }
	splits := make([]split, len(keys))
	for i, k := range keys {
		cur, ok := g.offsets[k]
		for _, o := range g.marksBelow(k, -1) {
			if ok && o < cur {
				splits[i].dead = append(splits[i].dead, o)
			} else {
				splits[i].live = append(splits[i].live, o)
			}
		}
	}
	set := make([]offsetSet, len(keys))
	room := markDeletesPerWrite
	take := func(s *offsetSet, offs []int64) {
		n := min(len(offs), room)
		room -= n
		s.marks = append(s.marks, offs[:n]...)
		s.later = append(s.later, offs[n:]...)
	}
	for i, k := range keys {
		set[i] = offsetSet{k: k, off: targets[k.q], back: true}
		take(&set[i], splits[i].live)
	}
	for i := range keys {
		take(&set[i], splits[i].dead)
	}
	var ops []store.MetaOp
	for _, s := range set {
		ops = g.markDeletes(ops, s.k, s.marks)
	}
	return ops, set
}

package equeue

import "github.com/equeue-go/equeue/store"

// markPass is one offset a write of a group's offsets sets, with the
// offsets of the send-back marks it deletes (passed, in order) and
// whether it moves the committed offset back.
type markPass struct {
	k      offsetKey
	off    int64
	passed []int64
	back   bool
}

// planMarks returns the deletions of the send-back marks of passes that
// the offsets' own write carries, at most markDeletesPerWrite, and each
// pass's offsetSet with the marks that write has no room for in later:
// deleted before it when the pass moves back (deleteMarksBeforeMovingBack),
// after it otherwise (deleteMarksAfter). g.mu must be held.
//
// The write makes room first for the marks a pass moving back deletes
// that are live now, at or above its key's committed offset (all of them
// for a key with none stored): they answer while the offsets stay, so
// deleted before a write the store then refuses, they would be gone
// though the offsets did not move, and a failure of their messages,
// delivered again, would be sent back twice. The other marks, dead ones
// below it and those a pass moving forward deletes, answer for nothing
// once before or after the write, as they go. Only when the live marks
// alone overflow the write are some deleted before it.
func (g *group) planMarks(passes []markPass) ([]store.MetaOp, []offsetSet) {
	type split struct{ live, rest []int64 }
	splits := make([]split, len(passes))
	for i, p := range passes {
		if !p.back {
			splits[i].rest = p.passed
			continue
		}
		cur, ok := g.offsets[p.k]
		for _, o := range p.passed {
			if ok && o < cur {
				splits[i].rest = append(splits[i].rest, o)
			} else {
				splits[i].live = append(splits[i].live, o)
			}
		}
	}
	set := make([]offsetSet, len(passes))
	room := markDeletesPerWrite
	take := func(s *offsetSet, offs []int64) {
		n := min(len(offs), room)
		room -= n
		s.marks = append(s.marks, offs[:n]...)
		s.later = append(s.later, offs[n:]...)
	}
	for i, p := range passes {
		set[i] = offsetSet{k: p.k, off: p.off, back: p.back}
		take(&set[i], splits[i].live)
	}
	for i := range passes {
		take(&set[i], splits[i].rest)
	}
	var ops []store.MetaOp
	for _, s := range set {
		ops = g.markDeletes(ops, s.k, s.marks)
	}
	return ops, set
}

// resetMarks is planMarks for a reset moving keys back to targets[k.q]:
// it deletes every mark of each key. g.mu must be held.
func (g *group) resetMarks(keys []offsetKey, targets map[QueueRef]int64) ([]store.MetaOp, []offsetSet) {
	passes := make([]markPass, len(keys))
	for i, k := range keys {
		passes[i] = markPass{k: k, off: targets[k.q], passed: g.marksBelow(k, -1), back: true}
	}
	return g.planMarks(passes)
}

package equeue

import (
	"slices"
	"sync"
)

// offsetRuns is a set of offsets of one queue, held as sorted runs of
// consecutive offsets: the corrupt records its reads found, so that
// Stats().CorruptRecords counts each once however many reads pass it.
// Damage comes in runs (a cut value log loses a tail of records), so the
// set stays small; runs below the queue's low watermark are dropped as
// they are trimmed. The zero value is ready to use.
type offsetRuns struct {
	mu   sync.Mutex
	runs []offsetRun // sorted, disjoint and not adjacent
}

// offsetRun is the offsets [from, to).
type offsetRun struct{ from, to int64 }

// add adds off to the set and reports whether it was not in it yet. Runs
// wholly below min, the queue's low watermark, are dropped first.
func (s *offsetRuns) add(off, min int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.below(min); n > 0 {
		s.runs = slices.Delete(s.runs, 0, n)
	}
	// i is the first run that starts after off.
	i, _ := slices.BinarySearchFunc(s.runs, off, func(r offsetRun, off int64) int {
		if r.from <= off {
			return -1
		}
		return 1
	})
	joinsPrev := i > 0 && s.runs[i-1].to >= off
	if joinsPrev && s.runs[i-1].to > off {
		return false // held already
	}
	joinsNext := i < len(s.runs) && s.runs[i].from == off+1
	switch {
	case joinsPrev && joinsNext:
		s.runs[i-1].to = s.runs[i].to
		s.runs = slices.Delete(s.runs, i, i+1)
	case joinsPrev:
		s.runs[i-1].to = off + 1
	case joinsNext:
		s.runs[i].from = off
	default:
		s.runs = slices.Insert(s.runs, i, offsetRun{from: off, to: off + 1})
	}
	return true
}

// below returns how many runs lie wholly below min.
func (s *offsetRuns) below(min int64) int {
	n := 0
	for n < len(s.runs) && s.runs[n].to <= min {
		n++
	}
	return n
}

// noteCorrupt counts (Stats().CorruptRecords) and logs the damaged record
// at off of q that a read found (err says what is wrong with it), unless a
// read found it before. min is q's low watermark.
func (e *Engine) noteCorrupt(q *queue, off, min int64, err error) {
	if q.corrupt.add(off, min) {
		e.stats.corrupt.Add(1)
		e.log.Error("corrupt record skipped", "topic", q.topic.name, "queue", q.id, "offset", off, "err", err)
	}
}

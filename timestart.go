package equeue

import "time"

// timeStart names the first offset of a queue stored at or after a time:
// where a group that starts from that time (ConsumeFromTimestamp), or is
// reset to it (ResetToTime), starts in the queue.
type timeStart struct {
	ref QueueRef
	at  time.Time
}

// foundStart is the offset a timeStart was found at in queue q.
type foundStart struct {
	q   *queue
	off int64
}

// timeStarts are the offsets of time starts, searched for in the store
// before the group's locks are taken: a binary search over store reads
// would hold up the group's commits and pulls for as long as they take.
type timeStarts map[timeStart]foundStart

// searchTimeStarts finds the offsets of ts, each once. It reads the store,
// so the caller must hold none of the group's locks. A start whose search
// failed is left out: the caller searches again under its locks and
// reports the error where it did before.
func (e *Engine) searchTimeStarts(ts []timeStart) timeStarts {
	if len(ts) == 0 {
		return nil
	}
	found := make(timeStarts, len(ts))
	for _, s := range ts {
		if _, ok := found[s]; ok {
			continue
		}
		q, err := e.queueOf(s.ref)
		if err != nil {
			continue
		}
		if off, err := e.offsetForTime(q, s.at); err == nil {
			found[s] = foundStart{q: q, off: off}
		}
	}
	return found
}

// start returns the offset of s when it was found in the queue that ref
// names now (not one of a topic deleted and created again since), no
// lower than the queue's first offset, which retention may have moved
// since; ok is false when it must be searched for again. (Sends take none
// of the group's locks: a search under them raced with sends as this one
// did.)
func (found timeStarts) start(e *Engine, s timeStart) (off int64, ok bool) {
	f, ok := found[s]
	if !ok {
		return 0, false
	}
	if q, err := e.queueOf(s.ref); err != nil || q != f.q {
		return 0, false
	}
	min, _, _ := f.q.bounds()
	return max(f.off, min), true
}

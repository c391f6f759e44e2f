package equeue

import "time"

// QueueLag is a consumer group's lag on one queue.
type QueueLag struct {
	QueueRef
	// Lag is how many of the queue's messages the group has yet to
	// consume: in a broadcasting group, its slowest member's.
	Lag int64
}

// QueueLags returns the group's lag on each of its queues, each queue
// once, in the order of its first row in Queues. A broadcasting group has
// a row per member and queue; its lag on a queue is the largest of them,
// its slowest member's: how far behind the member that is furthest behind
// is (a sum would count each message once per member). The lag the equeue
// command, the console and the metrics and otel packages show is this.
func (g GroupInfo) QueueLags() []QueueLag {
	at := make(map[QueueRef]int, len(g.Queues))
	out := make([]QueueLag, 0, len(g.Queues))
	for _, q := range g.Queues {
		i, seen := at[q.QueueRef]
		if !seen {
			at[q.QueueRef] = len(out)
			out = append(out, QueueLag{QueueRef: q.QueueRef, Lag: q.Lag})
			continue
		}
		out[i].Lag = max(out[i].Lag, q.Lag)
	}
	return out
}

// TotalLag returns the group's lag over all its queues: the sum of
// QueueLags.
func (g GroupInfo) TotalLag() int64 {
	var n int64
	for _, q := range g.QueueLags() {
		n += q.Lag
	}
	return n
}

// startLag is a row of GroupInfo.Queues whose group has no offset in its
// queue: its lag counts from where the group will start there.
type startLag struct {
	row  int        // index in GroupInfo.Queues
	min  int64      // the queue's first offset when the row was read
	lost lostRanges // the queue's offsets known to hold no record, then
	from ConsumeFrom
}

// lagsFromStart sets the lag of the rows starts names, from where the group
// will start in each queue (its ConsumeFrom, from time at), as FetchOffsets
// will start it; from the queue's first offset when that start cannot be
// found. A start from a time searches the store, so the caller must not
// hold the group's lock; rows of one queue (a broadcasting group's members)
// share one search.
func (e *Engine) lagsFromStart(rows []GroupQueueInfo, starts []startLag, at time.Time) {
	if len(starts) == 0 {
		return
	}
	type key struct {
		q    QueueRef
		from ConsumeFrom
	}
	found := map[key]int64{}
	for _, s := range starts {
		r := &rows[s.row]
		k := key{r.QueueRef, s.from}
		start, ok := found[k]
		if !ok {
			var err error
			if start, err = e.startOffset(r.QueueRef, s.from, at); err != nil {
				start = s.min
			}
			found[k] = start
		}
		r.Lag = s.lost.held(max(start, s.min), r.MaxOffset)
	}
}

package equeue

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

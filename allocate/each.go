package allocate

import "slices"

// Each divides the queues of every topic among consumers, each list in
// topics on its own (one list per topic), exactly as one s.Allocate call
// per list would, and calls f once for every distinct queue with the
// consumer that owns it. With no consumers it calls f for none.
//
// For the strategies of this package it does so without the calls: the
// consumers are sorted once rather than once per topic, ConsistentHash
// builds its ring once, and no map holding every consumer is made per
// topic. A group with many members on many topics is rebalanced in time
// linear in members plus queues (plus the ring's). Another Strategy is
// called once per list.
func Each(s Strategy, topics [][]Queue, consumers []string, f func(q Queue, consumer string)) {
	cs := normalizeConsumers(consumers)
	if len(cs) == 0 || !slices.ContainsFunc(topics, func(t []Queue) bool { return len(t) > 0 }) {
		return // nothing to divide: no ring is built
	}
	switch s := s.(type) {
	case average:
		for _, t := range topics {
			qs := normalizeQueues(t)
			for i, c := range cs {
				start, end := averageRun(len(qs), len(cs), i)
				if start >= end {
					break // so do the consumers after it
				}
				for _, q := range qs[start:end] {
					f(q, c)
				}
			}
		}
	case averageByCircle:
		for _, t := range topics {
			for j, q := range normalizeQueues(t) {
				f(q, cs[j%len(cs)])
			}
		}
	case consistentHash:
		ring := s.ring(cs)
		for _, t := range topics {
			for _, q := range normalizeQueues(t) {
				f(q, cs[ring.owner(q)])
			}
		}
	default:
		for _, t := range topics {
			for c, owned := range s.Allocate(t, cs) {
				for _, q := range owned {
					f(q, c)
				}
			}
		}
	}
}

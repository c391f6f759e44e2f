// Package allocate decides which consumer of a consumer group reads which
// queue of a topic.
//
// A consumer group that subscribes to a topic spreads the topic's queues over
// its live consumers. The engine, as the group's coordinator, recomputes the
// division every time a consumer joins or leaves or queues are added, so a
// Strategy must be a pure function of the set of queues and the set of
// consumer IDs: the order in which the inputs are listed, and any duplicates
// in them, make no difference, and two processes given the same sets agree
// on the result.
//
// Three strategies are provided:
//
//   - Average hands each consumer one contiguous run of the sorted queues,
//     exactly as RocketMQ's AllocateMessageQueueAveragely does.
//   - AverageByCircle deals the sorted queues out round-robin.
//   - ConsistentHash places consumers on a hash ring, so that a consumer
//     joining or leaving only moves queues to or from that consumer.
//
// Strategies hold no mutable state and are safe for concurrent use.
package allocate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Queue identifies one queue of a topic.
type Queue struct {
	// Topic is the topic name.
	Topic string
	// ID is the queue number within the topic, from 0.
	ID int
}

// Strategy divides a group's queues among its live consumers.
type Strategy interface {
	// Name returns the name under which ByName finds the strategy.
	Name() string
	// Allocate returns, for every consumer ID in consumers, the queues it owns. Every consumer
	// appears as a key (possibly with an empty slice). Inputs need not be sorted or unique; the
	// strategy sorts queues by (Topic, ID) and consumers as strings and drops duplicates, so the
	// result depends only on the sets. Each queue is owned by exactly one consumer when there is
	// at least one consumer; with no consumers the result is an empty map. Never panics. Must not
	// modify its input slices. Queues in each result slice are sorted by (Topic, ID).
	Allocate(queues []Queue, consumers []string) map[string][]Queue
}

// Names accepted by ByName.
const (
	nameAverage         = "average"
	nameAverageByCircle = "average-by-circle"
	nameConsistentHash  = "consistent-hash"
)

// ErrUnknownStrategy is wrapped by the error ByName returns for a name it
// does not know.
var ErrUnknownStrategy = errors.New("unknown allocation strategy")

// ByName returns the strategy registered under name: "average",
// "average-by-circle" or "consistent-hash" (with the default number of
// virtual nodes). Any other name yields an error wrapping ErrUnknownStrategy.
func ByName(name string) (Strategy, error) {
	switch name {
	case nameAverage:
		return Average(), nil
	case nameAverageByCircle:
		return AverageByCircle(), nil
	case nameConsistentHash:
		return ConsistentHash(0), nil
	default:
		return nil, fmt.Errorf("allocate: %w %q", ErrUnknownStrategy, name)
	}
}

// compareQueues orders queues by topic, then by ID.
func compareQueues(a, b Queue) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// normalizeQueues returns a sorted, duplicate-free copy of queues.
func normalizeQueues(queues []Queue) []Queue {
	out := slices.Clone(queues)
	slices.SortFunc(out, compareQueues)
	return slices.Compact(out)
}

// normalizeConsumers returns a sorted, duplicate-free copy of consumers.
func normalizeConsumers(consumers []string) []string {
	out := slices.Clone(consumers)
	slices.Sort(out)
	return slices.Compact(out)
}

// emptyResult returns a map holding an empty, non-nil slice for every
// consumer in consumers.
func emptyResult(consumers []string) map[string][]Queue {
	out := make(map[string][]Queue, len(consumers))
	for _, c := range consumers {
		out[c] = []Queue{}
	}
	return out
}

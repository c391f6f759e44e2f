package allocate_test

import (
	"cmp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/equeue-go/equeue/allocate"
)

func compareQueue(a, b allocate.Queue) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// drawQueues draws a sorted, duplicate-free set of 0..300 queues spread over
// 1..3 topics.
func drawQueues(t *rapid.T) []allocate.Queue {
	topics := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z][a-z0-9._-]{0,7}`), 1, 3, rapid.ID[string]).Draw(t, "topics")
	remaining := rapid.IntRange(0, 300).Draw(t, "queues")
	var out []allocate.Queue
	for i, topic := range topics {
		n := remaining
		if i < len(topics)-1 {
			n = rapid.IntRange(0, remaining).Draw(t, "topicQueues")
		}
		remaining -= n
		base := rapid.IntRange(0, 3).Draw(t, "firstID")
		for id := range n {
			out = append(out, allocate.Queue{Topic: topic, ID: base + id})
		}
	}
	slices.SortFunc(out, compareQueue)
	return out
}

var consumerGen = rapid.StringMatching(`[a-z0-9@.:-]{0,10}`)

// drawConsumers draws a sorted, duplicate-free set of minN..maxN consumer IDs.
func drawConsumers(t *rapid.T, minN, maxN int) []string {
	out := rapid.SliceOfNDistinct(consumerGen, minN, maxN, rapid.ID[string]).Draw(t, "consumers")
	slices.Sort(out)
	return out
}

// messUp returns s shuffled, with some of its elements repeated.
func messUp[E any](t *rapid.T, s []E, label string) []E {
	out := slices.Clone(s)
	if len(s) > 0 {
		extra := rapid.SliceOfN(rapid.IntRange(0, len(s)-1), 0, 20).Draw(t, label+"Dups")
		for _, i := range extra {
			out = append(out, s[i])
		}
	}
	return rapid.Permutation(out).Draw(t, label+"Shuffled")
}

// checkPartition asserts the contract every strategy shares, given the
// canonical (sorted, unique) inputs and the strategy's result.
func checkPartition(t *rapid.T, queues []allocate.Queue, consumers []string, got map[string][]allocate.Queue) {
	require.NotNil(t, got)
	require.Len(t, got, len(consumers), "one key per consumer")
	if len(consumers) == 0 {
		return
	}
	seen := make(map[allocate.Queue]string, len(queues))
	for _, c := range consumers {
		owned, ok := got[c]
		require.True(t, ok, "consumer %q missing", c)
		require.True(t, slices.IsSortedFunc(owned, compareQueue), "queues of %q not sorted: %v", c, owned)
		for _, q := range owned {
			prev, dup := seen[q]
			require.False(t, dup, "queue %v owned by %q and %q", q, prev, c)
			seen[q] = c
		}
	}
	require.Len(t, seen, len(queues), "every queue owned")
	for _, q := range queues {
		require.Contains(t, seen, q)
	}
}

// checkEven asserts that owned counts differ by at most one.
func checkEven(t *rapid.T, got map[string][]allocate.Queue) {
	if len(got) == 0 {
		return
	}
	lo, hi := -1, 0
	for _, owned := range got {
		if lo < 0 || len(owned) < lo {
			lo = len(owned)
		}
		hi = max(hi, len(owned))
	}
	require.LessOrEqual(t, hi-lo, 1, "uneven allocation: min %d max %d", lo, hi)
}

// checkStrategy draws inputs, checks the shared contract and input
// invariance, and hands the canonical inputs and result to extra.
func checkStrategy(t *testing.T, s allocate.Strategy,
	extra func(t *rapid.T, queues []allocate.Queue, consumers []string, got map[string][]allocate.Queue)) {
	rapid.Check(t, func(t *rapid.T) {
		queues := drawQueues(t)
		consumers := drawConsumers(t, 0, 50)

		got := s.Allocate(queues, consumers)
		checkPartition(t, queues, consumers, got)
		if extra != nil {
			extra(t, queues, consumers, got)
		}

		messyQueues := messUp(t, queues, "queues")
		messyConsumers := messUp(t, consumers, "consumers")
		queuesCopy, consumersCopy := slices.Clone(messyQueues), slices.Clone(messyConsumers)

		require.Equal(t, got, s.Allocate(messyQueues, messyConsumers), "result depends on input order or duplicates")
		require.Equal(t, queuesCopy, messyQueues, "queues input modified")
		require.Equal(t, consumersCopy, messyConsumers, "consumers input modified")
	})
}

func TestAverage_Properties(t *testing.T) {
	checkStrategy(t, allocate.Average(), func(t *rapid.T, queues []allocate.Queue, consumers []string, got map[string][]allocate.Queue) {
		checkEven(t, got)
		// Consumers in sorted order hold consecutive runs, largest first.
		var joined []allocate.Queue
		for i, c := range consumers {
			if i > 0 {
				require.LessOrEqual(t, len(got[c]), len(got[consumers[i-1]]))
			}
			joined = append(joined, got[c]...)
		}
		if len(consumers) > 0 {
			require.Equal(t, len(queues), len(joined))
			if len(queues) > 0 {
				require.Equal(t, queues, joined)
			}
		}
	})
}

func TestAverageByCircle_Properties(t *testing.T) {
	checkStrategy(t, allocate.AverageByCircle(), func(t *rapid.T, queues []allocate.Queue, consumers []string, got map[string][]allocate.Queue) {
		checkEven(t, got)
		if m := len(consumers); m > 0 {
			for j, q := range queues {
				require.Equal(t, q, got[consumers[j%m]][j/m], "queue index %d", j)
			}
		}
	})
}

func TestConsistentHash_Properties(t *testing.T) {
	checkStrategy(t, allocate.ConsistentHash(0), nil)
}

func TestConsistentHash_MinimalMovement(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := allocate.ConsistentHash(rapid.IntRange(0, 200).Draw(t, "virtualNodes"))
		queues := drawQueues(t)
		all := drawConsumers(t, 1, 51)
		newcomer := rapid.SampledFrom(all).Draw(t, "newcomer")
		consumers := slices.DeleteFunc(slices.Clone(all), func(c string) bool { return c == newcomer })

		before := s.Allocate(queues, consumers)
		after := s.Allocate(queues, all)
		checkPartition(t, queues, consumers, before)
		checkPartition(t, queues, all, after)

		// Adding newcomer: a queue either stays put or moves to newcomer.
		ownerBefore := owners(before)
		for c, owned := range after {
			if c == newcomer {
				continue
			}
			for _, q := range owned {
				require.Equal(t, ownerBefore[q], c, "adding %q moved %v between others", newcomer, q)
			}
		}

		// Removing newcomer again: only its queues move.
		ownerAfter := owners(after)
		for c, owned := range before {
			for _, q := range owned {
				if ownerAfter[q] != newcomer {
					require.Equal(t, ownerAfter[q], c, "removing %q moved %v between others", newcomer, q)
				}
			}
		}

		// Removing some other consumer from the larger group.
		if len(consumers) > 0 {
			gone := rapid.SampledFrom(consumers).Draw(t, "removed")
			rest := slices.DeleteFunc(slices.Clone(all), func(c string) bool { return c == gone })
			shrunk := s.Allocate(queues, rest)
			checkPartition(t, queues, rest, shrunk)
			for c, owned := range after {
				if c == gone {
					continue
				}
				for _, q := range owned {
					require.Contains(t, shrunk[c], q, "removing %q moved %v away from %q", gone, q, c)
				}
			}
		}
	})
}

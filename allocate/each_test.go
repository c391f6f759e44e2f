package allocate_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/equeue-go/equeue/allocate"
)

// wrapped hides a built-in strategy's type, so that Each takes its path for
// strategies it does not know.
type wrapped struct{ allocate.Strategy }

// TestEach_SameAsAllocatePerTopic checks that Each divides every topic's
// queues as one Allocate call per topic does, whatever the order of its
// inputs and their duplicates, for each strategy and for one Each does not
// know.
func TestEach_SameAsAllocatePerTopic(t *testing.T) {
	strategies := append(allStrategies(), wrapped{allocate.ConsistentHash(7)}, wrapped{allocate.Average()})
	for _, s := range strategies {
		t.Run(s.Name(), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				queues := drawQueues(t)
				consumers := drawConsumers(t, 0, 40)
				var topics [][]allocate.Queue
				for i, q := range queues {
					if i == 0 || q.Topic != queues[i-1].Topic {
						topics = append(topics, nil)
					}
					topics[len(topics)-1] = append(topics[len(topics)-1], q)
				}
				for i := range topics {
					topics[i] = messUp(t, topics[i], "topic")
				}
				want := map[allocate.Queue]string{}
				for _, tq := range topics {
					for c, owned := range s.Allocate(tq, consumers) {
						for _, q := range owned {
							want[q] = c
						}
					}
				}
				got := map[allocate.Queue]string{}
				allocate.Each(s, topics, messUp(t, consumers, "consumers"), func(q allocate.Queue, c string) {
					_, dup := got[q]
					require.False(t, dup, "queue %v given twice", q)
					got[q] = c
				})
				require.Equal(t, want, got)
			})
		})
	}
}

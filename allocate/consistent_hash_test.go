package allocate_test

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/allocate"
)

func TestConsistentHash_Table(t *testing.T) {
	runTable(t, allocate.ConsistentHash(0), []allocCase{
		{
			name:      "0 queues",
			queues:    nil,
			consumers: consumerIDs(3),
			want:      map[string][]allocate.Queue{"c0": {}, "c1": {}, "c2": {}},
		},
		{
			name:      "0 consumers",
			queues:    span("t", 4),
			consumers: nil,
			want:      map[string][]allocate.Queue{},
		},
		{
			name:      "1 consumer",
			queues:    cat(qs("b", 3, 1), qs("a", 2)),
			consumers: []string{"only"},
			want:      map[string][]allocate.Queue{"only": cat(qs("a", 2), qs("b", 1, 3))},
		},
		{
			name:      "1 consumer listed twice",
			queues:    qs("t", 1, 0, 1),
			consumers: []string{"only", "only"},
			want:      map[string][]allocate.Queue{"only": qs("t", 0, 1)},
		},
	})
}

// TestConsistentHash_Golden pins the ring layout: the hash must give the
// same answer in every process and every release, or consumers running
// different builds would disagree about who owns what.
func TestConsistentHash_Golden(t *testing.T) {
	got := allocate.ConsistentHash(0).Allocate(span("orders", 12), []string{"alpha", "beta", "gamma"})
	want := map[string][]allocate.Queue{
		"alpha": qs("orders", 1, 6, 11),
		"beta":  qs("orders", 0, 2, 3, 4, 5, 7, 9),
		"gamma": qs("orders", 8, 10),
	}
	assert.Equal(t, want, got)
}

func TestConsistentHash_DuplicatesAndOrderDoNotMatter(t *testing.T) {
	s := allocate.ConsistentHash(0)
	queues := cat(span("a", 20), span("b", 20))
	consumers := consumerIDs(6)
	want := s.Allocate(queues, consumers)

	messyQueues := slices.Clone(queues)
	slices.Reverse(messyQueues)
	messyQueues = append(messyQueues, queues[:7]...)
	messyConsumers := append(slices.Clone(consumers), "c3", "c0")
	slices.Reverse(messyConsumers)

	assert.Equal(t, want, s.Allocate(messyQueues, messyConsumers))
}

func TestConsistentHash_VirtualNodeDefaults(t *testing.T) {
	queues, consumers := span("t", 100), consumerIDs(7)
	want := allocate.ConsistentHash(160).Allocate(queues, consumers)
	assert.Equal(t, want, allocate.ConsistentHash(0).Allocate(queues, consumers))
	assert.Equal(t, want, allocate.ConsistentHash(-3).Allocate(queues, consumers))
	assert.Equal(t, want, allocate.ConsistentHash(math.MinInt).Allocate(queues, consumers))
}

func TestConsistentHash_ExtremeVirtualNodes(t *testing.T) {
	queues, consumers := span("t", 50), consumerIDs(3)
	for _, vn := range []int{1, 2, math.MaxInt} {
		got := allocate.ConsistentHash(vn).Allocate(queues, consumers)
		require.Len(t, got, 3, "virtualNodes=%d", vn)
		total := 0
		for _, owned := range got {
			total += len(owned)
		}
		assert.Equal(t, 50, total, "virtualNodes=%d", vn)
	}
}

// TestConsistentHash_Balance checks that with the default virtual node count
// no consumer is starved or flooded.
func TestConsistentHash_Balance(t *testing.T) {
	const nQueues, nConsumers = 10000, 10
	got := allocate.ConsistentHash(0).Allocate(span("t", nQueues), consumerIDs(nConsumers))
	mean := nQueues / nConsumers
	for c, owned := range got {
		assert.Greater(t, len(owned), mean/2, "consumer %s", c)
		assert.Less(t, len(owned), mean*3/2, "consumer %s", c)
	}
}

func TestConsistentHash_AddConsumerMovesOnlyToIt(t *testing.T) {
	s := allocate.ConsistentHash(0)
	queues := span("t", 256)
	before := s.Allocate(queues, consumerIDs(8))
	after := s.Allocate(queues, append(consumerIDs(8), "newcomer"))

	assert.NotEmpty(t, after["newcomer"])
	owner := owners(before)
	for c, owned := range after {
		if c == "newcomer" {
			continue
		}
		for _, q := range owned {
			assert.Equal(t, owner[q], c, "queue %v moved between staying consumers", q)
		}
	}
}

// owners inverts an allocation.
func owners(alloc map[string][]allocate.Queue) map[allocate.Queue]string {
	out := make(map[allocate.Queue]string)
	for c, owned := range alloc {
		for _, q := range owned {
			out[q] = c
		}
	}
	return out
}

package allocate

import (
	"cmp"
	"slices"
	"strconv"
)

const (
	// defaultVirtualNodes is the number of ring positions per consumer when
	// ConsistentHash is given zero or a negative count.
	defaultVirtualNodes = 160
	// maxVirtualNodes bounds the ring size per consumer, so that an absurd
	// argument costs time and memory proportional to this cap, not to it.
	maxVirtualNodes = 1 << 14
)

type consistentHash struct {
	virtualNodes int
}

// ConsistentHash returns a strategy that places virtualNodes positions per
// consumer on a 64-bit hash ring and gives each queue to the consumer owning
// the first position at or after the queue's hash, wrapping around. A
// virtualNodes of zero or less selects the default of 160; values above
// 16384 are capped at 16384.
//
// Position k of consumer c is the hash of c + "#" + k, and queue q sits at
// the hash of q.Topic + "/" + q.ID, both in decimal. The hash is FNV-1a 64
// followed by the MurmurHash3 64-bit finalizer, so results are the same in
// every process.
//
// Because a consumer's positions do not depend on the other consumers,
// adding or removing one consumer only moves queues to or from that
// consumer; no queue moves between two consumers that stay.
func ConsistentHash(virtualNodes int) Strategy {
	if virtualNodes <= 0 {
		virtualNodes = defaultVirtualNodes
	}
	return consistentHash{virtualNodes: min(virtualNodes, maxVirtualNodes)}
}

func (consistentHash) Name() string { return nameConsistentHash }

// ringNode is one virtual node: a position on the ring and the index of the
// owning consumer in the sorted consumer list.
type ringNode struct {
	hash     uint64
	consumer int
}

func (s consistentHash) Allocate(queues []Queue, consumers []string) map[string][]Queue {
	cs := normalizeConsumers(consumers)
	out := emptyResult(cs)
	if len(cs) == 0 {
		return out
	}
	ring := s.ring(cs)
	// Queues are visited in sorted order, so every result slice comes out
	// sorted as well.
	for _, q := range normalizeQueues(queues) {
		c := cs[ring.owner(q)]
		out[c] = append(out[c], q)
	}
	return out
}

// hashRing is the sorted ring of a set of consumers' virtual nodes.
type hashRing []ringNode

// ring places the virtual nodes of cs, which must be sorted and unique.
func (s consistentHash) ring(cs []string) hashRing {
	ring := make(hashRing, 0, len(cs)*s.virtualNodes)
	for i, c := range cs {
		for k := range s.virtualNodes {
			ring = append(ring, ringNode{hash: hashKey(c, '#', k), consumer: i})
		}
	}
	// Ties on the hash are broken by consumer ID (consumer indexes follow
	// the sorted IDs), which is an order that does not depend on which
	// other consumers are present. Ties within one consumer are harmless.
	slices.SortFunc(ring, func(a, b ringNode) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(a.consumer, b.consumer)
	})
	return ring
}

// owner returns the index, in the sorted consumers, of q's owner. The ring
// must not be empty.
func (r hashRing) owner(q Queue) int {
	h := hashKey(q.Topic, '/', q.ID)
	i, _ := slices.BinarySearchFunc(r, h, func(n ringNode, h uint64) int {
		return cmp.Compare(n.hash, h)
	})
	if i == len(r) {
		i = 0
	}
	return r[i].consumer
}

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// hashKey hashes s + string(sep) + decimal(n) without building the string.
func hashKey(s string, sep byte, n int) uint64 {
	var h uint64 = fnvOffset64
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	h ^= uint64(sep)
	h *= fnvPrime64
	var buf [24]byte
	for _, b := range strconv.AppendInt(buf[:0], int64(n), 10) {
		h ^= uint64(b)
		h *= fnvPrime64
	}
	return mix64(h)
}

// mix64 is the MurmurHash3 fmix64 finalizer; it spreads FNV's weak low
// bits over the whole word so that similar keys land far apart on the ring.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

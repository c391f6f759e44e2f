package equeue

import (
	"fmt"
	"hash/fnv"
	"runtime/debug"
	"sync/atomic"
)

// QueueSelector picks the queue a message is sent to. writable lists the
// topic's queue IDs open to producers (never empty); Select returns one of
// them. Implementations must be safe for concurrent use. A Select that
// panics fails the send with ErrSelectorPanic; nothing is stored.
type QueueSelector interface {
	// Select returns the queue ID, one of writable, for m.
	Select(m *Message, writable []int) int
}

// QueueSelectorFunc adapts a function to QueueSelector.
type QueueSelectorFunc func(m *Message, writable []int) int

// Select calls f.
func (f QueueSelectorFunc) Select(m *Message, writable []int) int { return f(m, writable) }

// selectQueue asks sel for m's queue, turning a panic into an error: the
// selector is user code, and may run on a goroutine of the producer's own
// (SendAsync), where a panic would end the program.
func selectQueue(sel QueueSelector, m *Message, writable []int) (q int, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrSelectorPanic, p, debug.Stack())
		}
	}()
	return sel.Select(m, writable), nil
}

// KeyHashSelector sends messages with the same first key to the same queue
// (FNV-1a of the key modulo the writable queue count) and messages without
// a key round robin. It is the default.
func KeyHashSelector() QueueSelector { return &keyHashSelector{} }

type keyHashSelector struct{ rr roundRobin }

func (s *keyHashSelector) Select(m *Message, writable []int) int {
	if k := m.routingKey(); k != "" {
		return writable[hashKey(k)%uint32(len(writable))]
	}
	return s.rr.Select(m, writable)
}

// RoundRobinSelector spreads messages over the writable queues in turn, ignoring keys.
func RoundRobinSelector() QueueSelector { return &roundRobin{} }

type roundRobin struct{ n atomic.Uint64 }

func (s *roundRobin) Select(_ *Message, writable []int) int {
	return writable[(s.n.Add(1)-1)%uint64(len(writable))]
}

func hashKey(k string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(k))
	return h.Sum32()
}

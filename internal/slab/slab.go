// Package slab hands out the values a decoder makes of a batch (messages
// of a pull answer) from a few shared arrays, instead of one allocation per
// value or one array as long as the batch says it is.
//
// The arrays grow with the values taken, never with a count read from the
// input: a damaged or hostile batch that claims a million messages and
// holds one costs one small array, not a million values.
package slab

// first is the length of a slab's first array: a default pull's batch
// (32 messages) in one allocation.
const first = 32

// Slab hands out new zero values of T for a batch of at most n of them.
// Its arrays hold at most twice the values taken, and first more: each
// holds as many values as were taken before it, at least first and at
// most what the batch has left. The values of one array keep it alive
// together, as the messages of one read share their slab.
type Slab[T any] struct {
	free  []T
	taken int
	left  int
}

// New returns a slab for a batch of at most n values.
func New[T any](n int) Slab[T] { return Slab[T]{left: n} }

// Take returns a new zero value of T.
func (s *Slab[T]) Take() *T {
	if len(s.free) == 0 {
		s.free = make([]T, max(min(max(s.taken, first), s.left), 1))
	}
	v := &s.free[0]
	s.free = s.free[1:]
	s.taken++
	s.left--
	return v
}

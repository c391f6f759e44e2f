package remote

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// bufferPool is the gRPC buffer pool of clients and servers. gRPC's default
// pool jumps from 32 KiB to 1 MiB and clears a whole buffer on every reuse,
// so each pull answer or batch of a few tens of KiB cost clearing 1 MiB,
// about a tenth of a pull's CPU on the broker and on the client. This pool
// has a tier for every power of two from 1 KiB to 16 MiB and does not
// clear: gRPC writes every byte of a buffer it gets (a read from the
// socket, a copy, or a marshal of exactly that size) before reading it,
// and these buffers never leave gRPC and this package's codec (codec.go).
var bufferPool mem.BufferPool = newTieredPool()

const (
	minPoolShift = 10 // 1 KiB: gRPC pools nothing smaller
	maxPoolShift = 24 // 16 MiB; larger buffers are allocated and dropped
)

type tieredPool struct {
	tiers [maxPoolShift - minPoolShift + 1]sync.Pool
}

func newTieredPool() *tieredPool { return &tieredPool{} }

// tier returns the index of the smallest tier that holds n bytes, or -1.
func tier(n int) int {
	if n <= 0 || n > 1<<maxPoolShift {
		return -1
	}
	return max(bits.Len(uint(n-1)), minPoolShift) - minPoolShift
}

// Get returns a buffer of length n; its bytes are not cleared.
func (p *tieredPool) Get(n int) *[]byte {
	t := tier(n)
	if t < 0 {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[t].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(t+minPoolShift))
	return &b
}

// Put keeps b for a later Get of at most its capacity.
func (p *tieredPool) Put(b *[]byte) {
	c := cap(*b)
	if c < 1<<minPoolShift || c > 1<<maxPoolShift {
		return
	}
	// The largest tier the capacity fills.
	t := bits.Len(uint(c)) - 1 - minPoolShift
	p.tiers[t].Put(b)
}

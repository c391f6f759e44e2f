package remote

import "sync"

// A client encodes each AppendAsync's append on the caller's goroutine
// when it is called, and keeps the bytes until the append is answered: a
// batch copies them into its request, and they go again in a later batch
// when the broker refused the append as busy, or on a new stream when the
// one its batch was written to refused the batch unsent. (They are not a
// copy the caller may change the message after: a batch with an append
// protobuf must encode, and a unary call, encode the caller's message
// when they are sent; a message must not change until its append is
// answered.) Allocating the bytes one by one was an allocation per
// message of every SendAsync. Small ones are cut from a shared slab
// instead: one allocation per slab, which the garbage collector frees
// once no append cut from it is kept. The pieces never overlap and each is
// written only by the append it was cut for, before the append is queued;
// no piece is ever handed out twice. A slab holds bytes only (no
// pointers), so an append kept long (one refused as busy, say) keeps at
// most its slab's slabSize bytes alive: with every append of the window in
// a slab of its own, the window (streamWindow appends) times slabSize, 32
// MiB, and as much for each append waiting for room in the window. Appends
// answered in about the order they were sent keep about their own bytes,
// and a slab or two more.

// slabSize is the size of a wireSlab's slabs.
const slabSize = 8 << 10

// maxSlabPiece is the largest buffer wireSlab cuts from a slab; larger
// ones are allocated alone.
const maxSlabPiece = 1 << 10

// wireSlab hands out the buffers of a client's encoded appends. The zero
// value is ready; a nil *wireSlab allocates every buffer alone.
type wireSlab struct {
	mu  sync.Mutex
	buf []byte // the current slab; its length is what was handed out
}

// take returns an empty buffer of capacity n, for one append's bytes.
func (w *wireSlab) take(n int) []byte {
	if w == nil || n > maxSlabPiece {
		return make([]byte, 0, n)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if cap(w.buf)-len(w.buf) < n {
		w.buf = make([]byte, 0, slabSize)
	}
	at := len(w.buf)
	w.buf = w.buf[:at+n]
	// Capacity n: appending past it allocates instead of writing into the
	// next piece.
	return w.buf[at : at : at+n]
}

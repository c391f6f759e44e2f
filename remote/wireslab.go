package remote

import "sync"

// A client encodes each AppendAsync's append when it is called (the
// caller may change the message once AppendAsync returns) and keeps the
// bytes until the append is answered, to send them again on a new stream
// if the one it went on breaks. Allocating them one by one was an
// allocation per message of every SendAsync. Small ones are cut from a
// shared slab instead: one allocation per slab, which the garbage collector
// frees once no append cut from it is kept. The pieces never overlap and
// each is written only by the append it was cut for, before the append is
// queued. A slab holds bytes only (no pointers), so an append kept long
// (one waiting to be sent again) keeps at most its slab's slabSize bytes
// alive: with every append of the window in a slab of its own, the window
// (streamWindow appends) times slabSize, 32 MiB, and as much for each
// append waiting for room in the window; appends answered in about the
// order they were sent keep a slab or two.

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

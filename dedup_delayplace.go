package equeue

// A delayed message's place. A delayed send has no offsets until its
// messages are moved, so its window entries once held only its queue and
// time (offset -1): every delayed send of one write looked alike, and a
// delayed [x, x] matched a delayed x sent alone. An entry now holds the
// message's place in its send, in its offset, below -1:
//
//	offset = -2 - (send << delayPlaceIndexBits | index)
//
// where send is the delay-log slot of the send's first message (its low
// bits: the slots of one write's sends differ, and the entries of
// different writes differ in time too) and index the message's index in
// the send. An entry of -1, written before places were, or for a message
// whose index does not fit, says only that the message was delayed: the
// window's queue and time alone decide for it, as before.

const (
	// delayPlaceIndexBits holds a message's index in its send: far more
	// messages than one store write takes.
	delayPlaceIndexBits = 20
	// delayPlaceSendMask keeps the bits of a send's first slot that fit
	// beside the index in a negative int64.
	delayPlaceSendMask = 1<<(62-delayPlaceIndexBits) - 1
)

// delayedOffset is the entry offset of message i of a delayed send whose
// first message took delay-log slot first: -1 (no place) when i does not
// fit.
func delayedOffset(first int64, i int) int64 {
	if i < 0 || i >= 1<<delayPlaceIndexBits || first < 0 {
		return -1
	}
	return -2 - ((first&delayPlaceSendMask)<<delayPlaceIndexBits | int64(i))
}

// entryPlace returns where an entry's message is: for a stored message,
// its offset in its queue (send -1); for a delayed one, its send and its
// index in it. ok is false for a delayed entry without a place (-1).
func entryPlace(d dedupEntry) (send, pos int64, ok bool) {
	switch {
	case d.offset >= 0:
		return -1, d.offset, true
	case d.offset == -1:
		return 0, 0, false
	}
	p := -2 - d.offset
	return p >> delayPlaceIndexBits, p & (1<<delayPlaceIndexBits - 1), true
}

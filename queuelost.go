package equeue

// Lost ranges. Offsets between a queue's store end and the end Open raised
// it to hold no record (queueend.go), and neither do offsets a restart
// found in the middle of a queue once sends went on past them. A queue
// keeps the range of its offsets it knows to be lost, so that counts of
// stored messages (TopicLimits.MaxMessages, TopicInfo.Messages) leave them
// out, and a low watermark that reaches them passes them: nothing is
// stored there, and a watermark that stopped at their start would stay
// there, for no record in them ever comes due.
//
// Open knows the range it raised an end over. A time search (offsetForTime)
// that reads past offsets with no record notes them too, so retention finds
// a range lost before a restart past it.

// lostRange is a range [from, to) of a queue's offsets known to hold no
// record. The zero value is empty.
type lostRange struct{ from, to int64 }

// in returns how many offsets of [lo, hi) r covers.
func (r lostRange) in(lo, hi int64) int64 {
	return max(min(r.to, hi)-max(r.from, lo), 0)
}

// held returns how many offsets of [lo, hi) hold records as far as r
// tells: the messages a queue with those bounds stores.
func (r lostRange) held(lo, hi int64) int64 {
	return max(hi-lo-r.in(lo, hi), 0)
}

// past returns off, or r's end when off falls in r.
func (r lostRange) past(off int64) int64 {
	if off >= r.from && off < r.to {
		return r.to
	}
	return off
}

// skip returns the low watermark that cutting n held offsets from off
// leaves: past r when the cut reaches it.
func (r lostRange) skip(off, n int64) int64 {
	o := r.past(off)
	if o < r.from && o+n >= r.from {
		return o + n + r.to - r.from
	}
	return o + n
}

// extent returns q's low watermark and next offset with the range of
// offsets between them known to hold no record.
func (q *queue) extent() (min, next int64, lost lostRange) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.min, q.next, q.lost
}

// noteLost notes that q stores no record in [from, to). Only offsets at or
// above the low watermark count: those below may be gone to retention. It
// keeps one range: a range that touches the one known grows it; else the
// new one replaces a known range the watermark has passed.
func (q *queue) noteLost(from, to int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	from = max(from, q.min)
	if from >= to {
		return
	}
	switch l := q.lost; {
	case l.to <= q.min || l.from >= l.to:
		q.lost = lostRange{from, to}
	case from <= l.to && to >= l.from:
		q.lost = lostRange{min(from, l.from), max(to, l.to)}
	}
}

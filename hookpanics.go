package equeue

import "sync/atomic"

// A hook's panic that is recovered rather than passed on to a caller (see
// Hooks) is counted in the engine's Stats.ConsumerHookPanics, so that it
// is seen even with a consumer's default, silent, logger, or a producer,
// which has none: a consumer's hooks run on its goroutines, where the
// message's outcome is its handler's and the panic is also logged; a
// SendAsync's AfterSend and trace end run on a goroutine of the producer's
// once the send completes, and its future also reports the panic; and a send's trace end that panics
// on the caller's goroutine after another hook did, whose panic goes on to
// the caller, is recovered only to be counted.

// hookPanicked logs err, the panics of c's hooks around the handling of m,
// and counts them, unless it is nil.
func (c *Consumer) hookPanicked(m *Message, err error) {
	if err == nil {
		return
	}
	c.log.Error("consumer hook panicked", "topic", m.Topic, "queue", m.Queue, "offset", m.Offset, "err", err)
	if e := trackerOf(c.b); e != nil {
		countHookPanics(&e.stats.hookPanics, err)
	}
}

// runHooks runs hooks, c's hooks named name around the handling of m,
// which recover their own panics and return them, and reports what they
// return (hookPanicked). A hook of theirs that calls runtime.Goexit, which
// recover cannot stop, is reported too, as it ends the goroutine.
func (c *Consumer) runHooks(m *Message, name string, hooks func() error) {
	returned := false
	defer func() {
		if !returned { // not a panic: hooks recovers every one
			c.hookPanicked(m, goexitError(name))
		}
	}()
	err := hooks()
	returned = true
	c.hookPanicked(m, err)
}

// countHookPanics adds the hook panics err holds to n, an engine's count
// of them; a nil n (a client of a remote broker) counts nothing.
func countHookPanics(n *atomic.Uint64, err error) {
	if n != nil && err != nil {
		n.Add(uint64(panicCount(err)))
	}
}

// panicCount is the number of hook panics err holds: errors that recovered
// returned, possibly joined (errors.Join, nested).
func panicCount(err error) int {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if err == nil {
			return 0
		}
		return 1
	}
	n := 0
	for _, e := range j.Unwrap() {
		n += panicCount(e)
	}
	return n
}

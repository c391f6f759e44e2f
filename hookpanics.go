package equeue

// A consumer's hooks run on its goroutines, where a hook's panic is
// recovered (see Hooks): the message's outcome is its handler's, and the
// panic is logged and counted, so that it is seen even with the consumer's
// default, silent, logger.

// hookPanicked logs err, the panics of c's hooks around the handling of m,
// and counts them, unless it is nil.
func (c *Consumer) hookPanicked(m *Message, err error) {
	if err == nil {
		return
	}
	c.log.Error("consumer hook panicked", "topic", m.Topic, "queue", m.Queue, "offset", m.Offset, "err", err)
	if e := trackerOf(c.b); e != nil {
		e.stats.hookPanics.Add(uint64(panicCount(err)))
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

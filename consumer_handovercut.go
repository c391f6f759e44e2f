package equeue

// keepCutHandOver keeps rs, a hand-over whose commit the bound of the
// close waiting for it cut (see waitHandOvers), for that close's final
// commit: the close commits their positions with its own queues', and
// Engine.Close does so again when the user's close was cut before (see
// closeForEngine). A queue the release gave to another member meanwhile
// is refused as fenced there, which is no failure (withoutFenced).
func (c *Consumer) keepCutHandOver(rs []*runner) {
	c.mu.Lock()
	c.cutHandOvers = append(c.cutHandOvers, rs...)
	c.mu.Unlock()
}

// takeCutHandOvers returns the runners keepCutHandOver kept and forgets
// them. Close calls it once the hand-overs it waits for have returned.
func (c *Consumer) takeCutHandOvers() []*runner {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.cutHandOvers
	c.cutHandOvers = nil
	return rs
}

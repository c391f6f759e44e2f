package equeue

import "context"

// A group's deletion deletes its keys and its memory first, then its
// %RETRY% and %DLQ% topics. A group of the same name made in between (by
// a member joining, such as one that DeleteGroup with Force removed and
// that joins again at once, or by CommitGroupOffsets) would find those
// topics still there: its failed messages would go to the retry topic
// about to be deleted and be lost with it, after its commits passed
// them. So from the moment the group leaves memory until its topics are
// deleted, its name is held, and what would make the group again waits.
// A group the engine does not hold in memory (a deletion cut short left
// only its topics) has its name held from the start of its deletion:
// nothing makes it in memory meanwhile, to be deleted from under it.

// holdName holds name for the deletion of its group and returns the
// hold, or nil when another deletion holds it already. c.mu must be held.
func (c *coordinator) holdName(name string) chan struct{} {
	if _, ok := c.held[name]; ok {
		return nil
	}
	if c.held == nil {
		c.held = map[string]chan struct{}{}
	}
	h := make(chan struct{})
	c.held[name] = h
	return h
}

// releaseName releases hold h on name (none when h is nil).
func (c *coordinator) releaseName(name string, h chan struct{}) {
	if h == nil {
		return
	}
	c.mu.Lock()
	if c.held[name] == h {
		delete(c.held, name)
	}
	c.mu.Unlock()
	close(h)
}

// heldName returns the hold on name, nil when there is none. c.mu must be
// held.
func (c *coordinator) heldName(name string) chan struct{} { return c.held[name] }

// awaitHold waits for hold h (see heldName) to be released.
func (c *coordinator) awaitHold(ctx context.Context, h chan struct{}) error {
	c.holdWaits.Add(1)
	defer c.holdWaits.Add(-1)
	select {
	case <-h:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

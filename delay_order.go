package equeue

import "errors"

// Moves in order. The scheduler queues the moves of one pass together and
// the writer may store them in more than one write: when the store
// refuses the write holding a move, the scheduler moves that message again
// on a later pass, and a move of the same queue queued after it and stored
// by a later write would land ahead of it, against the order of a delayed
// batch (and of messages due one after another). So each move names the
// move queued before it to the same queue (command.after), and the writer
// refuses a move whose predecessor it did not store: both stay in the
// delay index and come due again together, in their order.

// errMoveOutOfOrder is the refusal of a move whose predecessor to its
// queue was not stored. Nothing of it is stored.
var errMoveOutOfOrder = errors.New("equeue: delayed message held back: the move of an earlier message to its queue was not stored")

// moveInOrder reports whether the writer may apply c, a move: not when the
// move before it to its queue was not stored, and then c is refused too.
// Until the writer applies c, c counts as not stored. Only the writer
// calls it.
func (e *Engine) moveInOrder(c *command) bool {
	c.moveRefused = true
	if c.after != nil && c.after.moveRefused {
		c.err = errMoveOutOfOrder
		return false
	}
	return true
}

// refusedMoves marks the moves of batch, whose write the store refused,
// as not stored. Only the writer calls it.
func refusedMoves(batch []*command) {
	for _, c := range batch {
		if c.kind == cmdMove {
			c.moveRefused = true
		}
	}
}

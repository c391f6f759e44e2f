package equeue

import (
	"errors"
)

// ErrNotHandled is returned by a consumer's Handler (also wrapped) for a
// message it did not begin to process before the consumer stopped it: a
// handler that passes messages on to another stage (a channel, a worker)
// and could not pass this one on before its context was cancelled. Such a
// run is not counted as an attempt (Message.Attempt, MaxAttempts): the
// message stays uncommitted, is neither sent back nor run again by the
// stopping consumer, and is delivered again to the queue's next owner as
// though this run had not happened; so for orderly and concurrent
// consumers, clustering or broadcasting. Returned while the handler's
// context is live, or by a BatchHandler, it is a failed attempt like any
// other error.
var ErrNotHandled = errors.New("equeue: message not handled before the handler was stopped")

// stoppedUnhandled reports whether err is r's Handler's ErrNotHandled
// returned once r.hctx, the parent of its context, was cancelled. A
// BatchHandler's is a failure like any other, also for a batch of one,
// which reaches the handler through the same paths as a single message.
func (r *runner) stoppedUnhandled(err error) bool {
	return r.c.o.BatchHandler == nil && r.hctx.Err() != nil && errors.Is(err, ErrNotHandled)
}

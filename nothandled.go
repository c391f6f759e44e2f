package equeue

import (
	"context"
	"errors"
)

// ErrNotHandled is returned by an orderly consumer's Handler (also wrapped)
// for a message it did not begin to process before the consumer stopped it:
// a handler that passes messages on to another stage (a channel, a worker)
// and could not pass this one on before its context was cancelled. Such a
// run is not counted as an attempt (Message.Attempt, MaxAttempts): the
// message stays uncommitted and is delivered again to the queue's next
// owner as though this run had not happened. Returned while the handler's
// context is live, or by a concurrent consumer's Handler or a
// BatchHandler, it is a failed attempt like any other error.
var ErrNotHandled = errors.New("equeue: message not handled before the handler was stopped")

// stoppedUnhandled reports whether err is a handler's ErrNotHandled
// returned once hctx, the parent of its context, was cancelled.
func stoppedUnhandled(hctx context.Context, err error) bool {
	return hctx.Err() != nil && errors.Is(err, ErrNotHandled)
}

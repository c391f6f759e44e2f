package equeue

import (
	"context"
	"errors"
	"fmt"
)

// ErrCloseAbandoned is returned (with the context's error) by
// Engine.CloseContext when its context ended before the close finished.
// The close goes on in the background and finishes when the store
// answers; until then the store stays open (a Badger directory stays
// locked by this process: Open of it returns ErrLocked). Nothing the
// engine acknowledged is lost: a write it answered stored was synced as
// its sync policy says, and a sender still waiting is answered on its own
// context, as always.
var ErrCloseAbandoned = errors.New("equeue: close abandoned before it finished")

// errCloseStopped is what Close and CloseContext return once the close
// stopped before it finished (ErrCloseUnfinished).
var errCloseStopped = fmt.Errorf("%w: the close stopped before it finished (it panicked): the store may be neither synced nor closed", ErrCloseUnfinished)

// CloseContext is Close that waits for the close only until ctx ends.
// The first call of Close or CloseContext starts the close; every call
// waits for that same close and returns its result. When ctx ends first,
// CloseContext returns at once an error matching ErrCloseAbandoned and
// ctx's error, and the close goes on in the background, as Close would
// have done it, until the store answers: a later Close waits for it and
// returns its result. With a ctx that never ends (context.Background) it
// is Close.
//
// Abandoning the close changes nothing for the calls still waiting on the
// engine: a Send or Append whose write was taken (queued for the writer,
// or being written) keeps waiting on its own context and, when that ends,
// gets an error matching ErrIndeterminate and the context's error, as it
// would without a close; the write may still be stored. For the store, an
// abandoned close is like a crash the process has not had yet: a host that
// exits then leaves the directory to be recovered by the next Open, with
// every write acknowledged stored as the sync policy says.
//
// The close runs on the caller's goroutine when ctx has no Done channel
// (context.Background), and on a goroutine of its own otherwise. A panic
// in it (a Store of the program's own whose Sync or Close panics) goes on
// in that goroutine: to the caller of Close, or, for a close run on a
// goroutine of its own, it ends the program as any panic nothing
// recovers; the close is not finished, and every later call returns an
// error matching ErrCloseUnfinished, never nil.
//
// A nil ctx or engine returns ErrInvalidArgument and closes nothing.
func (e *Engine) CloseContext(ctx context.Context) error {
	if e == nil {
		return fmt.Errorf("%w: nil engine", ErrInvalidArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	return e.closer.Wait(ctx, e.shutdown, errCloseStopped, ErrCloseAbandoned)
}

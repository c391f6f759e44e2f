package cluster

import (
	"errors"
	"fmt"

	"github.com/equeue-go/equeue"
)

// cutShort reports the outcome of what, a call the leader's engine makes
// in several writes (a group's deletion: its keys, then its retry and
// dead-letter topics), when its tenure ended under it. The engine refuses
// the write it was making then (equeue.ErrNotLeader, or equeue.ErrClosed
// once its close began), but the writes before it may be stored: the call
// is cut short, not undone, and answering it as a refusal that did
// nothing (a *NotLeaderError) would tell the caller what did not happen.
// Such an error is wrapped to match equeue.ErrIndeterminate as well:
// send the call again to the new leader, which finishes it. The engine's
// own refusal of the call before it began (a bare equeue.ErrClosed) did
// nothing, and is left as it is.
func cutShort(what string, err error) error {
	if err == equeue.ErrClosed {
		return err
	}
	return cutShortAfterWrites(what, err)
}

// cutShortAfterWrites is cutShort for a call known to have stored writes
// already (a redrive that sent some dead letters back, each in a write of
// its own): even a bare equeue.ErrClosed, which the engine answers a step
// of the call that comes after its close began, is then no refusal of the
// whole call.
func cutShortAfterWrites(what string, err error) error {
	if err == nil || errors.Is(err, equeue.ErrIndeterminate) {
		return err
	}
	if errors.Is(err, equeue.ErrNotLeader) || errors.Is(err, equeue.ErrClosed) {
		return fmt.Errorf("%w: cluster: %s was cut short by the end of the leader's tenure, after writes that may be stored: %w",
			equeue.ErrIndeterminate, what, err)
	}
	return err
}

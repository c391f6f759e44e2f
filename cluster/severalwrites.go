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

// topicsChangedUnder is the outcome of a call refused for the end of the
// leader's tenure (err: equeue.ErrNotLeader, or equeue.ErrClosed once the
// engine's close began) while the engine's topics changed under it. A
// call may create topics on its way (AutoCreateTopics, a group's retry
// topic a join subscribes), each in a write of its own, before the write
// the end of the tenure refused: such a call did something, and a
// refusal would say it did nothing. It is answered with an error
// matching equeue.ErrIndeterminate as well (cutShortAfterWrites). The
// topics a call made and those another call made meanwhile are not told
// apart: a refused call is answered so whenever the topics changed while
// it ran. Any other error is returned as it is.
func topicsChangedUnder(err error) error {
	return cutShortAfterWrites("a call during which the leader's topics changed (it may have created some)", err)
}

package cluster

import (
	"errors"
	"fmt"

	"github.com/equeue-go/equeue"
)

// cutShort reports the outcome of what, a call the leader's engine makes
// in several writes (a group's deletion: its keys, then its retry and
// dead-letter topics; a redrive: one write per dead letter), when its
// tenure ended under it. The engine refuses the write it was making then
// (equeue.ErrNotLeader, or equeue.ErrClosed once its close began), but
// the writes before it may be stored: the call is cut short, not undone,
// and answering it as a refusal that did nothing (a *NotLeaderError)
// would tell the caller what did not happen. Such an error is wrapped to
// match equeue.ErrIndeterminate as well: send the call again to the new
// leader, which finishes it. The engine's own refusal of the call before
// it began (a bare equeue.ErrClosed) did nothing, and is left as it is.
func cutShort(what string, err error) error {
	if err == nil || err == equeue.ErrClosed || errors.Is(err, equeue.ErrIndeterminate) {
		return err
	}
	if errors.Is(err, equeue.ErrNotLeader) || errors.Is(err, equeue.ErrClosed) {
		return fmt.Errorf("%w: cluster: %s was cut short by the end of the leader's tenure, after writes that may be stored: %w",
			equeue.ErrIndeterminate, what, err)
	}
	return err
}

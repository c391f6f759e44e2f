package equeue

import "errors"

// moveErrs gathers the errors of one pass of the scheduler's moves (see
// scheduler.move) so that a failure is told once: the moves of one
// refused write share its error, which is kept once, and a move held back
// behind a move not stored (errMoveOutOfOrder) is no failure of its own,
// only counted, nor is a move refused because its topic was deleted
// while it was under way (topicGone), whose message goes with its topic.
type moveErrs struct {
	errs     []error
	heldBack int
	gone     int
}

// errMoveTopicDeleted is what a pass returns when no move failed but some
// were refused because their topic was deleted under them (and others
// held back behind those, of the same queues): the pass that follows at
// once drops their messages with the topic.
var errMoveTopicDeleted = errors.New("equeue: delayed messages refused for their deleted topic")

// topicGone notes a move refused because its topic was deleted while it
// was under way: no failure, its index key is left for the next pass to
// drop.
func (m *moveErrs) topicGone() { m.gone++ }

// add notes err, the outcome of one move or of the pass.
func (m *moveErrs) add(err error) {
	if errors.Is(err, errMoveOutOfOrder) {
		m.heldBack++
		return
	}
	for _, e := range m.errs {
		if e == err || e.Error() == err.Error() {
			return
		}
	}
	m.errs = append(m.errs, err)
}

// err returns the failures of the pass, each once; when nothing failed,
// errMoveTopicDeleted when moves were refused for their deleted topic (a
// move held back then is behind one of those, to the same queue of that
// topic: the scheduler passes again at once), else errMoveOutOfOrder when
// moves were held back (the pass is then tried again soon, as after a
// failure, but the scheduler does not log it as one).
func (m *moveErrs) err() error {
	if len(m.errs) == 0 && m.gone > 0 {
		return errMoveTopicDeleted
	}
	if len(m.errs) == 0 && m.heldBack > 0 {
		return errMoveOutOfOrder
	}
	return errors.Join(m.errs...)
}

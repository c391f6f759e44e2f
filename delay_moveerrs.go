package equeue

import "errors"

// moveErrs gathers the errors of one pass of the scheduler's moves (see
// scheduler.move) so that a failure is told once: the moves of one
// refused write share its error, which is kept once, and a move held back
// behind a move not stored (errMoveOutOfOrder) is no failure of its own,
// only counted.
type moveErrs struct {
	errs     []error
	heldBack int
}

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

// err returns the failures of the pass, each once; errMoveOutOfOrder when
// moves were held back and nothing else failed (the pass is then tried
// again soon, as after a failure, but the scheduler does not log it as
// one).
func (m *moveErrs) err() error {
	if len(m.errs) == 0 && m.heldBack > 0 {
		return errMoveOutOfOrder
	}
	return errors.Join(m.errs...)
}

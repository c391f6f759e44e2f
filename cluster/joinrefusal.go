package cluster

import (
	"errors"

	"github.com/equeue-go/equeue"
)

// joinRefusal is a node's refusal of a join for not leading (err, a
// *NotLeaderError): it matches err and equeue.ErrJoinRefused, with err's
// text.
type joinRefusal struct{ err error }

func (r *joinRefusal) Error() string   { return r.err.Error() }
func (r *joinRefusal) Unwrap() []error { return []error{r.err, equeue.ErrJoinRefused} }

// joinRefused marks err, a join's through call, as a refusal when it says
// that nothing was done for the join because the node does not lead: the
// node refused the call before its engine took it, or its engine was
// closed under the call (its tenure ended), which call answers as not
// leading. Errors the engine returns keep their own sentinels (every
// refusal of its matches equeue.ErrJoinRefused already), and one that may
// have done something (equeue.ErrIndeterminate) is no refusal.
func joinRefused(err error) error {
	if err == nil || !errors.Is(err, equeue.ErrNotLeader) ||
		errors.Is(err, equeue.ErrJoinRefused) || errors.Is(err, equeue.ErrIndeterminate) {
		return err
	}
	return &joinRefusal{err: err}
}

// unknownJoin is the error of a join that matches equeue.ErrIndeterminate
// (cut short after writes that may be stored: topics it created, say),
// without the refusal mark the engine put on the error it was cut short
// with: a join is either unknown or refused, and unknown wins, so that a
// Start leaves for it. Other errors are returned as they are.
func unknownJoin(err error) error {
	if err == nil || !errors.Is(err, equeue.ErrIndeterminate) || !errors.Is(err, equeue.ErrJoinRefused) {
		return err
	}
	return withoutRefusal(err)
}

// withoutRefusal is err with equeue.ErrJoinRefused taken out of its
// tree: the errors on the way to it are replaced by ones of the same
// text, the others kept as they are (their types, for errors.As, too).
// It is nil for equeue.ErrJoinRefused itself.
func withoutRefusal(err error) error {
	if err == equeue.ErrJoinRefused {
		return nil
	}
	if !errors.Is(err, equeue.ErrJoinRefused) {
		return err
	}
	var kids []error
	switch x := err.(type) {
	case interface{ Unwrap() []error }:
		kids = x.Unwrap()
	case interface{ Unwrap() error }:
		kids = []error{x.Unwrap()}
	}
	out := &unmarkedError{text: err.Error()}
	for _, k := range kids {
		if k = withoutRefusal(k); k != nil {
			out.errs = append(out.errs, k)
		}
	}
	return out
}

// unmarkedError stands for an error withoutRefusal rebuilt: its text,
// and what it wraps less the refusal mark.
type unmarkedError struct {
	text string
	errs []error
}

func (e *unmarkedError) Error() string   { return e.text }
func (e *unmarkedError) Unwrap() []error { return e.errs }

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

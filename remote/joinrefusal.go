package remote

import (
	"errors"

	"github.com/equeue-go/equeue"
)

// joinRefusal is a join the server refused before its backend saw it: it
// matches equeue.ErrJoinRefused and err, the error that says why, with
// err's text.
type joinRefusal struct{ err error }

func (r *joinRefusal) Error() string   { return r.err.Error() }
func (r *joinRefusal) Unwrap() []error { return []error{r.err, equeue.ErrJoinRefused} }

// refusedJoin marks err as the refusal of a join that added no member.
func refusedJoin(err error) error {
	if err == nil || errors.Is(err, equeue.ErrJoinRefused) {
		return err
	}
	return &joinRefusal{err: err}
}

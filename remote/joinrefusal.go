package remote

import (
	"errors"
	"slices"

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

// joinFailure is the error of a join that failed with err (as fail maps
// it), marked as a refusal (equeue.ErrJoinRefused, beside its own
// sentinel) when the join provably added no member: its request never
// left the client (sent false: refused by the client's transport, as
// ErrMetadataTooLarge is, or its context ended before a retry of a busy
// refusal was sent), or the server refused it before running its handler
// (ErrUnauthenticated, ErrPermissionDenied, ErrBusy). A join sent and not
// answered (a connection cut after sending, its context ended meanwhile)
// may have added the member: it is left as it is, and so is one that
// matches equeue.ErrIndeterminate.
func joinFailure(err error, sent bool) error {
	if err == nil || errors.Is(err, equeue.ErrIndeterminate) {
		return err
	}
	if !sent || refusedBeforeHandler(err) {
		return refusedJoin(err)
	}
	return err
}

// refusedBeforeHandler reports whether err is a refusal the server (or
// the client's transport) makes before the call's handler runs.
func refusedBeforeHandler(err error) bool {
	return errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrPermissionDenied) ||
		errors.Is(err, ErrBusy) || errors.Is(err, ErrMetadataTooLarge)
}

// unrefused is err, a join's, without the refusal marks this package puts
// on it (a joinRefusal, equeue.ErrJoinRefused among an *Error's
// sentinels), every other sentinel and type kept: for a join that failed
// on one attempt but may have added a member on an earlier one.
func unrefused(err error) error {
	switch x := err.(type) {
	case *joinRefusal:
		return unrefused(x.err)
	case *Error:
		if !slices.Contains(x.errs, equeue.ErrJoinRefused) {
			return err
		}
		out := *x
		out.errs = slices.DeleteFunc(slices.Clone(x.errs), func(s error) bool { return s == equeue.ErrJoinRefused })
		return &out
	}
	return err
}

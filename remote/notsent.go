package remote

import (
	"errors"

	"github.com/equeue-go/equeue"
)

// notSentError marks the error of a call that failed as unavailable
// before its request left the client (the connection was refused, or not
// there): no broker saw it, so it may be sent to another node even when
// it changes the engine. Its text and chain are its cause's.
type notSentError struct{ err error }

func (e notSentError) Error() string { return e.err.Error() }
func (e notSentError) Unwrap() error { return e.err }

// unsentUnavailable marks err, the error of a call whose request never
// left the client, when it matches ErrUnavailable; other errors (a
// refusal before the call, a context that ended) are returned as they are.
func unsentUnavailable(err error) error {
	if err == nil || !errors.Is(err, ErrUnavailable) {
		return err
	}
	return notSentError{err: err}
}

// neverSent reports whether err is a call's failure as unavailable whose
// request provably never left the client (unsentUnavailable).
func neverSent(err error) bool {
	var n notSentError
	return errors.As(err, &n) && !errors.Is(err, equeue.ErrIndeterminate)
}

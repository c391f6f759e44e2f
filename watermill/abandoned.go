package watermill

import (
	"errors"

	"github.com/equeue-go/equeue"
)

// withoutAbandoned drops from a consumer's Close error its report of
// handlers it gave up on (equeue.ErrHandlerAbandoned): for a subscription
// that is a message not Ack'd (or an Unmarshaler that never returned) by
// the end of ShutdownTimeout, which goes back to the group, as Watermill
// expects of a message not acknowledged at Close; no failure of Close.
func withoutAbandoned(err error) error {
	if err == nil || !errors.Is(err, equeue.ErrHandlerAbandoned) {
		return err
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil // a chain of one error: the report itself
	}
	var rest []error
	for _, e := range j.Unwrap() {
		if e = withoutAbandoned(e); e != nil {
			rest = append(rest, e)
		}
	}
	return errors.Join(rest...)
}

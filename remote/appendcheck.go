package remote

import (
	"fmt"

	"github.com/equeue-go/equeue"
)

// checkAppend refuses, before anything is encoded or sent, an append the
// engine refuses for its shape alone (a nil request, a nil message) with
// the engine's ErrInvalidArgument: the client's own encoding and size
// checks read every message, and would dereference a nil one. A queue
// number the wire cannot carry is refused too (checkQueue).
func checkAppend(req *equeue.AppendRequest) error {
	if req == nil {
		return fmt.Errorf("%w: nil append request", equeue.ErrInvalidArgument)
	}
	if err := checkQueue(req.Topic, req.Queue); err != nil {
		return err
	}
	for i, m := range req.Messages {
		if m == nil {
			return fmt.Errorf("%w: message %d is nil", equeue.ErrInvalidArgument, i)
		}
	}
	return nil
}

package equeue

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// abandonedHandlers returns Close's report (ErrHandlerAbandoned) of the
// runners of list whose drain gave up on a handler call still running,
// and of the fenced handlers (see waitFencedHandlers) Close left running,
// or nil. Close calls it before its final commit, which stops before each
// such call's message (an orderly queue's committable offset is its
// running message; a concurrent queue's, its lowest unfinished one): a
// call that returns in between, its message then committed, is reported
// all the same, never one whose message the commit left behind. A call
// that returns after the commit is ignored, but for a success, which only
// marks its message done (see handleOrderly and beginDispose): nothing of
// the closed consumer commits it, but Engine.Close's redo of a final
// commit its user's bound cut (closeForEngine), which passes it. That
// redo does not report these handlers again. A fenced handler's message
// is committed by no one but the queue's next owner.
func abandonedHandlers(list []*runner, fenced int) error {
	var queues []string
	for _, r := range list {
		if r.gaveUp.Load() && r.calls.Load()&callsCount > 0 {
			queues = append(queues, r.grant.QueueRef.String())
		}
	}
	var errs []error
	if len(queues) > 0 {
		slices.Sort(queues)
		errs = append(errs, fmt.Errorf("%w: %d queue(s) (%s): their messages may be delivered again",
			ErrHandlerAbandoned, len(queues), strings.Join(queues, ", ")))
	}
	if fenced > 0 {
		errs = append(errs, fmt.Errorf("%w: %d handler call(s) of fenced queues: their messages are delivered again",
			ErrHandlerAbandoned, fenced))
	}
	return errors.Join(errs...)
}

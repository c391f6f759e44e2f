package main

import (
	"errors"
	"fmt"

	"github.com/equeue-go/equeue"
)

// sendFailure is a produce that a refused or failed send ended: it names
// the line (or argument) and says what became of it and of the messages
// around it, so that a script can tell what to send again.
type sendFailure struct {
	line inputLine // the message that failed
	err  error     // its send's error
	// before is how many messages before it were stored (and printed).
	before int
	// sentAfter is how many later lines were already sent when it failed
	// (an in-process engine takes sends ahead), storedAfter how many of
	// them were stored (and printed).
	sentAfter, storedAfter int
}

func (e *sendFailure) Error() string {
	what := fmt.Sprintf("%s %d", e.line.unit, e.line.no)
	state := "was not stored"
	if errors.Is(e.err, equeue.ErrIndeterminate) {
		state = "may or may not be stored (outcome unknown)"
	}
	before := "nothing before it was stored"
	switch {
	case e.before == 1:
		before = "the 1 message before it was stored (printed on stdout)"
	case e.before > 1:
		before = fmt.Sprintf("the %d messages before it were stored (printed on stdout)", e.before)
	}
	after := "no " + e.line.unit + " after it was sent"
	if e.sentAfter > 0 {
		after = fmt.Sprintf("%d sent after it, of which %d stored (printed on stdout)", e.sentAfter, e.storedAfter)
	}
	return fmt.Sprintf("%s: %v\n(%s %s; %s; %s)", what, e.err, what, state, before, after)
}

func (e *sendFailure) Unwrap() error { return e.err }

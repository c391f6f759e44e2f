package equeue

import "time"

// A close cut by its own context before its final commit or leave were
// done leaves them to Engine.Close (closeForEngine), which keeps the
// consumer known for that. It does so only while the member's session
// runs (memberGate.sessionEnds): the engine cannot expire a member before
// its last heartbeat's sending plus its session timeout, as it counts
// from the receipt. Past that, the member may have expired and another
// incarnation of its ID joined, and a commit of a member gone fails
// Engine.Close. So the consumer is forgotten then, its redo dropped, and a
// redo Engine.Close reaches later is not done: the engine keeps no more
// consumers than the closes cut within a session timeout.
//
// The check of the session and the redo's commit are not one step: a new
// incarnation may still join between them. The commit carries the
// consumer's incarnation (CommitRequest.Incarnation), which the broker
// refuses (ErrNotMember) once another one holds the member ID, so that a
// broadcasting member's late commit never moves the new incarnation's
// offsets back; Engine.Close reports that refusal.

// keepCutUntil runs forget once end has passed (at once when it has); a
// zero end (the session unknown) runs it never: Engine.Close does the
// redo.
func keepCutUntil(end time.Time, forget func()) {
	if end.IsZero() {
		return
	}
	if d := time.Until(end); d > 0 {
		time.AfterFunc(d, forget)
		return
	}
	forget()
}

// sessionLapsed reports whether end, a member's session end
// (memberGate.sessionEnds), has passed: the engine may have expired it.
func sessionLapsed(end time.Time) bool {
	return !end.IsZero() && !time.Now().Before(end)
}

// runCutRedoHook runs e's cutRedoHook when a test set it (e nil: none).
func runCutRedoHook(e *Engine) {
	if e == nil {
		return
	}
	if h := e.cutRedoHook.Load(); h != nil {
		(*h)()
	}
}

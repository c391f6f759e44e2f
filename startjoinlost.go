package equeue

import (
	"context"
	"errors"
	"log/slog"
)

// joinRefusal is the error of a join the broker refused: it matches
// ErrJoinRefused and the error that says why, with the latter's text.
type joinRefusal struct{ err error }

func (r *joinRefusal) Error() string   { return r.err.Error() }
func (r *joinRefusal) Unwrap() []error { return []error{r.err, ErrJoinRefused} }

// refusedJoin marks err, a join's, as a refusal (ErrJoinRefused), unless
// it matches ErrIndeterminate: a join that wrote what may be stored (its
// group's configuration, not known durable) is unknown, not refused, and
// unknown wins, so that a Start leaves for it.
func refusedJoin(err error) error {
	if err == nil || errors.Is(err, ErrJoinRefused) || errors.Is(err, ErrIndeterminate) {
		return err
	}
	return &joinRefusal{err: err}
}

// joinMayHaveLanded reports whether err, a failed join's, leaves open that
// the broker joined the member all the same, its answer lost: unless the
// broker said it refused the join (ErrJoinRefused), whatever the error
// (the call's context ended, a broken connection, ErrIndeterminate).
func joinMayHaveLanded(err error) bool {
	return !errors.Is(err, ErrJoinRefused)
}

// mayBeMember reports whether a Start whose join failed with err may
// leave a member of its incarnation in the group: its join may have
// landed (joinMayHaveLanded), or the incarnation is carried over from an
// earlier Start whose join may have, its leave unanswered (carried). A
// refusal (ErrJoinRefused) says that this join added no member, not that
// the earlier one added none: the member it made stays until a leave.
func mayBeMember(err error, carried bool) bool {
	return carried || joinMayHaveLanded(err)
}

// leaveLostJoin is the leave of a Start whose join failed but may have
// landed (joinMayHaveLanded), so that the member it may have made does not
// hold its queues, and its member ID, until its session expires; a join
// landing after the leave is refused (departures.go). Best effort, within
// the context bound returns. It reports whether the broker answered the
// leave: then the incarnation of req left (or never joined) and the next
// Start must join as a new one, the broker refusing a join of one that
// left; else the next Start is the same incarnation, so that it takes
// the member over should the join have landed.
func leaveLostJoin(bound func() (context.Context, context.CancelFunc), b Broker, req *JoinRequest, log *slog.Logger) bool {
	ctx, cancel := bound()
	defer cancel()
	err := leaveGroup(ctx, b, req)
	if notLeft(err) {
		log.Warn("leave after a join whose outcome is unknown", "group", req.Group, "err", err)
		return false
	}
	return true
}

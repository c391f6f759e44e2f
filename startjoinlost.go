package equeue

import (
	"context"
	"errors"
	"log/slog"
)

// joinRefusals are the errors a broker answers a join with when it did
// not join the member: with one of them, a failed join added no member.
var joinRefusals = []error{
	ErrInvalidArgument, ErrInvalidName, ErrInvalidOptions, ErrTopicNotFound,
	ErrSubscriptionMismatch, ErrMemberIDInUse, ErrNotMember, ErrGroupNameTaken,
	ErrClosed, ErrNotLeader, ErrStoreFailed,
}

// joinMayHaveLanded reports whether err, a failed join's, leaves open that
// the broker joined the member all the same, its answer lost: the call's
// context ended, the outcome is unknown (ErrIndeterminate), or the error
// is none of a broker's refusals (a transport's own, such as a broken
// connection).
func joinMayHaveLanded(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrIndeterminate) {
		return true
	}
	for _, r := range joinRefusals {
		if errors.Is(err, r) {
			return false
		}
	}
	return true
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

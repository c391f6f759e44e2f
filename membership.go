package equeue

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// runMembership keeps a member in its group until ctx ends: it heartbeats
// (a long-poll that returns early when the group's assignment changes),
// hands every new assignment to apply, and rejoins after the engine expired
// the member (calling lost first, since its grants are gone).
func runMembership(ctx context.Context, b Broker, join *JoinRequest, wait time.Duration, log *slog.Logger,
	known func() int64, apply func(context.Context, Assignment) error, lost func()) {
	const minBackoff = 100 * time.Millisecond
	backoff := minBackoff
	for ctx.Err() == nil {
		a, err := b.Heartbeat(ctx, &HeartbeatRequest{Group: join.Group, Member: join.Member, KnownVersion: known(), Wait: wait})
		if err == nil {
			if a.Version != known() {
				err = apply(ctx, a)
			}
		} else if errors.Is(err, ErrNotMember) {
			log.Warn("no longer a group member; rejoining", "err", err)
			lost()
			if a, err = b.JoinGroup(ctx, join); err == nil {
				err = apply(ctx, a)
			}
		}
		switch {
		case err == nil:
			backoff = minBackoff
			continue
		case ctx.Err() != nil || errors.Is(err, ErrClosed):
			return
		}
		log.Warn("heartbeat failed", "err", err, "retry_in", backoff)
		if !sleepCtx(ctx, backoff) {
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

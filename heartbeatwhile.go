package equeue

import (
	"context"
	"errors"
	"time"
)

// heartbeatWhile runs f, a broker call of a member made before its
// membership loop heartbeats (PullConsumer.Start fetching the offsets of
// its join's grants, which may take longer than the engine's session
// timeout), and keeps the member alive with heartbeats meanwhile, so that
// the engine does not expire it and rebalance its group. The heartbeats
// long-poll for wait, naming known as the assignment version the member
// holds and then the version each answer told: a change of the member's
// assignment meanwhile answers one of them at once, not every one after
// it. None is applied here; the membership loop that begins after f
// heartbeats with the version f applied and gets the newest one at once.
// A heartbeat that fails is tried again after wait, but for one that says
// the member is gone (f's broker calls fail then too). heartbeatWhile
// returns f's result once the heartbeats stopped.
func heartbeatWhile(ctx context.Context, b Broker, join *JoinRequest, known int64, wait time.Duration, f func() error) error {
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for hctx.Err() == nil {
			a, err := b.Heartbeat(hctx, &HeartbeatRequest{Group: join.Group, Member: join.Member, KnownVersion: known, Wait: wait, Incarnation: join.Incarnation})
			switch {
			case err == nil:
				known = a.Version
			case errors.Is(err, ErrNotMember) || errors.Is(err, ErrGroupNotFound) || errors.Is(err, ErrClosed):
				return
			case !sleepCtx(hctx, wait):
				return
			}
		}
	}()
	err := f()
	cancel()
	<-done
	return err
}

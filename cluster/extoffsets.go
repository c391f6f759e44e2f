package cluster

import (
	"context"
	"time"

	"github.com/equeue-go/equeue"
)

// CommitGroupOffsets stores the offsets of a group whose members track them
// themselves (Kafka clients) on the leader, replicated like every write (see
// Engine.CommitGroupOffsets).
func (n *Node) CommitGroupOffsets(ctx context.Context, group string, offsets map[equeue.QueueRef]int64) error {
	return call0(n, func(e *equeue.Engine) error { return e.CommitGroupOffsets(ctx, group, offsets) })
}

// GroupOffsets returns such a group's offsets from the leader (see
// Engine.GroupOffsets).
func (n *Node) GroupOffsets(ctx context.Context, group string) (map[equeue.QueueRef]int64, error) {
	return call(n, func(e *equeue.Engine) (map[equeue.QueueRef]int64, error) { return e.GroupOffsets(ctx, group) })
}

// KeepGroup tells the leader's engine that such a group is in use (see
// Engine.KeepGroup). Like the idle time commits give, it lives in that
// engine's memory only: a new leader counts idle time afresh.
func (n *Node) KeepGroup(ctx context.Context, group string) error {
	return call0(n, func(e *equeue.Engine) error { return e.KeepGroup(ctx, group) })
}

// ClaimGroup claims such a group's name on the leader's engine while the
// group has live members (see Engine.ClaimGroup). Like KeepGroup it lives
// in that engine's memory only: the listener of a new leader claims anew.
func (n *Node) ClaimGroup(ctx context.Context, group string, d time.Duration) error {
	return call0(n, func(e *equeue.Engine) error { return e.ClaimGroup(ctx, group, d) })
}

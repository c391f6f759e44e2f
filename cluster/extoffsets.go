package cluster

import (
	"context"

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

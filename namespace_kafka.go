package equeue

import (
	"context"
	"time"
)

// CommitGroupOffsets stores the offsets of a group of the namespace whose
// members track them themselves (see Engine.CommitGroupOffsets). With it and
// GroupOffsets a namespace can back the Kafka listener (package kafka).
func (n *Namespace) CommitGroupOffsets(ctx context.Context, group string, offsets map[QueueRef]int64) error {
	in := make(map[QueueRef]int64, len(offsets))
	for ref, off := range offsets {
		in[n.inRef(ref)] = off
	}
	return n.err(n.e.CommitGroupOffsets(ctx, n.in(group), in))
}

// GroupOffsets returns such a group's offsets (see Engine.GroupOffsets).
func (n *Namespace) GroupOffsets(ctx context.Context, group string) (map[QueueRef]int64, error) {
	offs, err := n.e.GroupOffsets(ctx, n.in(group))
	if err != nil {
		return nil, n.err(err)
	}
	out := make(map[QueueRef]int64, len(offs))
	for ref, off := range offs {
		out[n.outRef(ref)] = off
	}
	return out, nil
}

// KeepGroup tells the engine such a group is in use (see Engine.KeepGroup).
func (n *Namespace) KeepGroup(ctx context.Context, group string) error {
	return n.err(n.e.KeepGroup(ctx, n.in(group)))
}

// ClaimGroup claims such a group's name while it has live members (see
// Engine.ClaimGroup).
func (n *Namespace) ClaimGroup(ctx context.Context, group string, d time.Duration) error {
	return n.err(n.e.ClaimGroup(ctx, n.in(group), d))
}

package equeue_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A reset of a broadcasting group moves the start kept in memory of an
// absent member (the store refused to write it) as it moves the stored
// offsets of one: when the member comes back under its ID it starts at
// the reset's target, not at the start kept from before the reset.
func TestHuntGroups_ResetMovesAnAbsentBroadcastMembersKeptStart(t *testing.T) {
	rig := newFaultRig(t, "memory", &equeue.Options{})
	e := rig.E
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	huntSend(t, e, "t", 1, "old", 1)
	var seen huntSeen
	opts := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "b", ID: id, Model: equeue.Broadcasting, From: equeue.ConsumeFromLatest,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
			Handler: func(_ context.Context, m *equeue.Message) error { seen.add(id, m); return nil }}
	}
	startConsumer(t, e, opts("stay")) // keeps the group alive
	ctx, failing := refuseStartWrites(t, rig, "off/b\x00a\x00")
	a, err := equeue.NewConsumer(e, opts("a"))
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	require.NoError(t, a.Close())
	failing.Store(false)

	require.NoError(t, e.ResetOffsets(ctxT(t), "b", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	back := startConsumer(t, e, opts("a"))
	defer func() { _ = back.Close() }()
	huntSend(t, e, "t", 1, "after-reset", 1)
	handled := func() map[string]int {
		seen.mu.Lock()
		defer seen.mu.Unlock()
		return maps.Clone(seen.by["a"])
	}
	eventually(t, 5*time.Second, func() bool { return handled()["after-reset-0"] > 0 }, "the member back handles what was sent once it returned")
	eventually(t, 5*time.Second, func() bool { return handled()["old-0"] > 0 }, "the member back starts at the reset's target")
	assert.Equal(t, map[string]int{"old-0": 1, "after-reset-0": 1}, handled(), "each message once")
}

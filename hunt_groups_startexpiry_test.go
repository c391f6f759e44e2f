package equeue_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A broadcasting member whose start the store refused to write (kept in
// the group's memory only) and that stayed away for GroupIdleTTL is
// forgotten as one with stored offsets is: when it comes back under its
// ID it starts where a new member would (the end, for a group starting
// from the latest message), not at the start kept from before, which
// would hand it every message sent while it was away.
func TestHuntGroups_AbsentBroadcastMembersKeptStartExpires(t *testing.T) {
	rig := newFaultRig(t, "memory", &equeue.Options{GroupIdleTTL: 300 * time.Millisecond})
	e := rig.E
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	huntSend(t, e, "t", 1, "old", 1)
	var seen huntSeen
	opts := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "b", ID: id, Model: equeue.Broadcasting, From: equeue.ConsumeFromLatest,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
			Handler: func(_ context.Context, m *equeue.Message) error { seen.add(id, m); return nil }}
	}
	startConsumer(t, e, opts("stay"))   // keeps the group alive
	x := startConsumer(t, e, opts("x")) // its offsets' deletion shows the expiry ran
	ctx, failing := refuseStartWrites(t, rig, "off/b\x00a\x00")
	a, err := equeue.NewConsumer(e, opts("a"))
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	require.NoError(t, a.Close())
	require.NoError(t, x.Close())
	huntSend(t, e, "t", 1, "while-away", 1)
	xKeys := func() (n int) {
		for _, k := range offsetKeys(t, rig.FS, "b") {
			if strings.HasPrefix(k, "off/b\x00x\x00") {
				n++
			}
		}
		return n
	}
	eventually(t, 30*time.Second, func() bool { return xKeys() == 0 }, "the absent members are forgotten")

	failing.Store(false)
	back := startConsumer(t, e, opts("a"))
	defer func() { _ = back.Close() }()
	huntSend(t, e, "t", 1, "after-return", 1)
	handled := func() map[string]int {
		seen.mu.Lock()
		defer seen.mu.Unlock()
		return maps.Clone(seen.by["a"])
	}
	eventually(t, 5*time.Second, func() bool { return handled()["after-return-0"] > 0 }, "the member back handles what was sent once it returned")
	assert.Equal(t, map[string]int{"after-return-0": 1}, handled(), "nothing sent while it was away")
}

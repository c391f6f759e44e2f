package equeue_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

const crashParkedTopic = "pk"

// crashParkedBodies are the bodies sent, due together, in their order:
// the large ones' moves fit no write of crashAdminOpen's small store.
func crashParkedBodies() []string {
	big := strings.Repeat("b", crashAdminBig)
	return []string{"A", "1" + big, "C", "2" + big}
}

// TestCrash_ParkedMovesKillAndReopen kills, with SIGKILL, a process whose
// engine, on a store too small for two due delayed messages, moved the
// small ones and parked the large ones. Reopened on a store that still
// refuses them, they are parked again and counted, the small ones not
// moved again; reopened on one that takes them, they land once, in the
// order they were due, after the small ones.
func TestCrash_ParkedMovesKillAndReopen(t *testing.T) {
	dir := t.TempDir()
	e, err := crashAdminOpen(dir, false, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctxBG, crashParkedTopic, 1))
	at := time.Now().Add(3 * time.Second)
	var msgs []*equeue.Message
	for _, b := range crashParkedBodies() {
		msgs = append(msgs, &equeue.Message{Topic: crashParkedTopic, Body: []byte(b), DeliverAt: at})
	}
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: crashParkedTopic, Messages: msgs})
	require.NoError(t, err)
	require.NoError(t, e.Close())

	c := startCrashChild(t, crashChildSpec{Test: "TestCrashParkedChild", Dir: dir, Ready: "ALLPARKED"})
	c.await(c.ready, "both moves parked")
	c.kill()

	bodies := crashParkedBodies()
	short := func(bs []string) []string {
		out := make([]string, len(bs))
		for i, b := range bs {
			out[i] = b[:1]
		}
		return out
	}
	// A store that still refuses them: parked again, and counted.
	e, err = crashAdminOpen(dir, true, nil)
	require.NoError(t, err)
	// The scan parks the large ones and moves the small one after the
	// first (if the child had not) in one pass; a park may be counted
	// before that move is visible.
	eventually(t, waitLong, func() bool {
		return e.Stats().ParkedDelayedMessages == 2 && len(queueBodies(t, e, crashParkedTopic, 0)) >= 2
	}, "parked again after the kill, the small ones moved")
	assert.Equal(t, 2, pendingDelayed(t, e))
	assert.Equal(t, []string{"A", "C"}, short(queueBodies(t, e, crashParkedTopic, 0)), "the small ones moved once")
	require.NoError(t, e.Close())

	// A store that takes them: they land once, in order.
	e, err = crashAdminOpen(dir, false, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	// The moves are visible before the pass that made them has taken them
	// off the pending count: wait for both.
	eventually(t, waitLong, func() bool {
		return len(queueBodies(t, e, crashParkedTopic, 0)) >= 4 && pendingDelayed(t, e) == 0
	}, "moved after the reopen")
	got := queueBodies(t, e, crashParkedTopic, 0)
	assert.Equal(t, []string{"A", "C", "1", "2"}, short(got))
	if assert.Len(t, got, 4) {
		assert.True(t, bodies[1] == got[2] && bodies[3] == got[3], "the large bodies whole")
	}
	assert.Zero(t, e.Stats().ParkedDelayedMessages)
	assert.Equal(t, 0, pendingDelayed(t, e))
}

// TestCrashParkedChild is the child of TestCrash_ParkedMovesKillAndReopen:
// it opens the directory on the small store, waits until both large moves
// are parked, says so and waits to be killed.
func TestCrashParkedChild(t *testing.T) {
	dir := crashChildDir(t)
	say := childSay()
	e, err := crashAdminOpen(dir, true, nil)
	if err != nil {
		say("ERROR open %v", err)
		os.Exit(3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for e.Stats().ParkedDelayedMessages < 2 {
		select {
		case <-ctx.Done():
			say("ERROR not parked")
			os.Exit(3)
		case <-time.After(10 * time.Millisecond):
		}
	}
	say("ALLPARKED")
	<-ctx.Done() // killed before
	os.Exit(3)
}

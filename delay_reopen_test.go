package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestDelay_ReopensBetweenSendsWithMixedDueTimes reopens the engine between
// delayed sends whose due times interleave, after the newest slots of the
// delay log were moved and once after the log was emptied, so that new
// sends take slots below ones used before: every message is delivered
// once, never before its time, and Delayed lists the pending ones soonest
// first, one entry each.
func TestDelay_ReopensBetweenSendsWithMixedDueTimes(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	base := time.Now()
	far := base.Add(6 * time.Second)
	due := map[string]time.Time{}
	send := func(e *equeue.Engine, id string, at time.Time) {
		t.Helper()
		p := newProducer(t, e, nil)
		defer p.Close()
		res, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: id, Body: []byte(id), DeliverAt: at})
		require.NoError(t, err)
		require.True(t, res.Delayed, id)
		due[id] = at
	}
	visible := func(e *equeue.Engine) []*equeue.Message {
		t.Helper()
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 100})
		require.NoError(t, err)
		return res.Messages
	}
	waitFor := func(e *equeue.Engine, n int) {
		t.Helper()
		eventually(t, 20*time.Second, func() bool { return len(visible(e)) >= n }, "%d messages visible", n)
	}
	// checkDelayed checks that Delayed lists, soonest first, each message
	// sent and not yet visible once (a move stores the message and deletes
	// its index key in one write, so the two add up once no move is under
	// way between the reads).
	checkDelayed := func(e *equeue.Engine) {
		t.Helper()
		var info equeue.DelayedInfo
		eventually(t, 20*time.Second, func() bool {
			var err error
			info, err = e.Delayed(ctx, 0)
			require.NoError(t, err)
			return info.Pending+len(visible(e)) == len(due)
		}, "every message sent is pending or visible, once")
		assert.Len(t, info.Next, info.Pending)
		for i := 1; i < len(info.Next); i++ {
			assert.False(t, info.Next[i].DeliverAt.Before(info.Next[i-1].DeliverAt), "soonest first: %v", info.Next)
		}
	}

	// The soonest takes the newest slot: once it is moved, the log ends
	// below the slots used so far.
	send(e, "a", far)
	send(e, "c", base.Add(4*time.Second))
	send(e, "b", base.Add(100*time.Millisecond))
	waitFor(e, 1)
	e = reopen()
	checkDelayed(e)
	// One due at the very time of a pending one, one soon, one between.
	send(e, "e", far)
	send(e, "f", base.Add(2*time.Second))
	send(e, "d", time.Now().Add(100*time.Millisecond))
	checkDelayed(e)
	waitFor(e, 2)
	e = reopen()
	checkDelayed(e)
	waitFor(e, 6)
	checkDelayed(e)

	// The delay log is empty now: a reopen starts it again.
	e = reopen()
	send(e, "g", time.Now().Add(300*time.Millisecond))
	send(e, "h", time.Now().Add(100*time.Millisecond))
	waitFor(e, 8)
	e = reopen()
	checkDelayed(e)

	msgs := visible(e)
	seen := map[string]int{}
	for i, m := range msgs {
		seen[m.ID]++
		assert.Equal(t, int64(i), m.Offset)
		assert.False(t, m.StoredAt.Before(due[m.ID]), "%s stored at %v, due at %v", m.ID, m.StoredAt, due[m.ID])
	}
	for id := range due {
		assert.Equal(t, 1, seen[id], "%s delivered once", id)
	}
	assert.Len(t, msgs, len(due))
}

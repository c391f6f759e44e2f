package equeue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

func TestDelay_VisibleAtItsTimeOnceAcrossRestart(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	p := newProducer(t, e, nil)
	start := time.Now()
	soon, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"a"}, Body: []byte("soon"), Delay: 300 * time.Millisecond, Properties: map[string]string{"p": "1"}})
	require.NoError(t, err)
	assert.True(t, soon.Delayed)
	assert.Equal(t, int64(-1), soon.Offset)
	later, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"a"}, Body: []byte("later"), DeliverAt: time.Now().Add(1500 * time.Millisecond)})
	require.NoError(t, err)
	big, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"a"}, Body: make([]byte, 200<<10), Delay: 200 * time.Millisecond})
	require.NoError(t, err)
	now, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"a"}, Body: []byte("now")})
	require.NoError(t, err)
	assert.Equal(t, int64(0), now.Offset, "delayed messages take no offset until due")

	q := soon.Queue
	pullAll := func(e *equeue.Engine) []*equeue.Message {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: q, Max: 100})
		require.NoError(t, err)
		return res.Messages
	}
	got := pullAll(e)
	require.Len(t, got, 1, "only the immediate message is visible at first")
	eventually(t, 10*time.Second, func() bool { return len(pullAll(e)) == 3 }, "soon and big delivered")
	msgs := pullAll(e)
	assert.GreaterOrEqual(t, msgs[1].StoredAt.Sub(start), 200*time.Millisecond, "not before its time")
	bodies := map[string]bool{}
	for _, m := range msgs {
		bodies[string(m.Body[:min(5, len(m.Body))])] = true
	}
	assert.True(t, bodies["soon"])
	for _, m := range msgs {
		if string(m.Body) == "soon" {
			assert.Equal(t, soon.ID, m.ID)
			assert.Equal(t, "1", m.Properties["p"])
		}
		if len(m.Body) == 200<<10 {
			assert.Equal(t, big.ID, m.ID)
		}
	}

	// The last one is still pending across a restart, then delivered once.
	e = reopen()
	eventually(t, 10*time.Second, func() bool { return len(pullAll(e)) == 4 }, "later delivered after restart")
	last := pullAll(e)[3]
	assert.Equal(t, later.ID, last.ID)
	assert.False(t, last.StoredAt.Before(start.Add(1400*time.Millisecond)))
	e = reopen()
	time.Sleep(200 * time.Millisecond)
	assert.Len(t, pullAll(e), 4, "delivered exactly once")
}

func TestDelay_BadInput(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{MaxDelay: time.Hour})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	for name, m := range map[string]*equeue.Message{
		"negative delay": {Topic: "t", Delay: -time.Second},
		"negative ttl":   {Topic: "t", TTL: -time.Second},
		"too far":        {Topic: "t", Delay: 2 * time.Hour},
		"too far at":     {Topic: "t", DeliverAt: time.Now().Add(2 * time.Hour)},
		// Expired before it is delivered: it would never be.
		"ttl within the delay":      {Topic: "t", Delay: 2 * time.Minute, TTL: time.Minute},
		"ttl as long as the delay":  {Topic: "t", Delay: time.Minute, TTL: time.Minute},
		"expiry before delivery at": {Topic: "t", DeliverAt: time.Now().Add(time.Minute), ExpiresAt: time.Now().Add(time.Second)},
	} {
		_, err := p.Send(ctx, m)
		assert.ErrorIs(t, err, equeue.ErrInvalidDelay, name)
		// Times in the message read as times, without the monotonic
		// clock's reading Go's %v adds ("m=+720000.01").
		assert.NotContains(t, fmt.Sprint(err), "m=+", name)
	}
	_, err := p.SendBatch(ctx, []*equeue.Message{{Topic: "t", Delay: time.Second}, {Topic: "t"}})
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "mixing delayed and immediate")
	r, err := p.Send(ctx, &equeue.Message{Topic: "t", Delay: time.Minute, TTL: 2 * time.Minute})
	require.NoError(t, err, "a TTL longer than the delay")
	assert.True(t, r.Delayed)
	// A delivery time in the past is simply immediate.
	r, err = p.Send(ctx, &equeue.Message{Topic: "t", DeliverAt: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	assert.False(t, r.Delayed)
	// A TTL makes the message expire.
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("short"), TTL: time.Millisecond})
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	assert.Len(t, res.Messages, 1)
	assert.Equal(t, 1, res.Expired)
}

// TestDelay_ManyPendingAndDeletedTopic schedules many messages, some due at
// once, and deletes a topic with pending ones: due ones arrive, the deleted
// topic's are dropped without blocking the rest.
func TestDelay_ManyPendingAndDeletedTopic(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	require.NoError(t, e.CreateTopic(ctx, "gone", 1))
	p := newProducer(t, e, nil)
	for i := range 2000 {
		d := time.Hour
		if i%10 == 0 {
			d = 100 * time.Millisecond
		}
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%d", i), Delay: d})
		require.NoError(t, err)
	}
	_, err := p.Send(ctx, &equeue.Message{Topic: "gone", Body: []byte("x"), Delay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.DeleteTopic(ctx, "gone"))
	total := func() int64 {
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		var n int64
		for _, q := range info.Queues {
			n += q.MaxOffset
		}
		return n
	}
	eventually(t, 10*time.Second, func() bool { return total() == 200 }, "the 200 due messages arrive, got %d", func() any { return total() })
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, int64(200), total(), "nothing else is due")
}

// TestDelay_BackToBackSchedules schedules each message right after the
// previous one was moved: a message scheduled while the scheduler is
// scanning must not wait for its next idle wake-up (a minute).
func TestDelay_BackToBackSchedules(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	for i := range 15 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x"), Delay: 20 * time.Millisecond})
		require.NoError(t, err)
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: int64(i), Wait: 10 * time.Second})
		require.NoError(t, err)
		require.Len(t, res.Messages, 1, "message %d not delivered in time", i)
	}
}

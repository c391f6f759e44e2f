package equeue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestConsumer_DefaultStartsAtEarliest: a work queue whose first worker
// starts after jobs were sent gets them (the zero ConsumerOptions.From is
// ConsumeFromEarliest), and the group shows them as lag before its first
// member owns a queue.
func TestConsumer_DefaultStartsAtEarliest(t *testing.T) {
	forTransports(t, testConsumer_DefaultStartsAtEarliest)
}

func testConsumer_DefaultStartsAtEarliest(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	p := newProducer(t, b, nil)
	for range 6 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("job")})
		require.NoError(t, err)
	}
	// A member that joined but was not granted anything yet: the group
	// exists and owes every stored message.
	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "probe", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	var lag int64
	for _, q := range gi.Queues {
		if q.Topic == "t" {
			assert.Equal(t, int64(-1), q.Committed, "queue %d has no offset yet", q.Queue)
			lag += q.Lag
		}
	}
	assert.Equal(t, int64(6), lag, "pending jobs show as lag")
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "probe"}))

	var handled atomic.Int64
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(context.Context, *equeue.Message) error { handled.Add(1); return nil }})
	eventually(t, 30*time.Second, func() bool { return handled.Load() == 6 }, "jobs sent before the group existed are handled (%d of 6)", func() any { return handled.Load() })
	eventually(t, 30*time.Second, func() bool { return groupLag(t, e, "g") == 0 }, "lag drops to zero")
}

// TestConsumer_ConsumeFromLatestStillAvailable: Latest remains an option.
func TestConsumer_ConsumeFromLatestStillAvailable(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, b := openOver(t, tr, "memory", nil)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		p := newProducer(t, b, nil)
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("old")})
		require.NoError(t, err)
		got := make(chan string, 4)
		c := startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
			From:    equeue.ConsumeFromLatest,
			Handler: func(_ context.Context, m *equeue.Message) error { got <- string(m.Body); return nil }})
		eventually(t, 30*time.Second, func() bool { return len(statsOf(c, "t")) == 1 }, "the consumer owns the queue")
		_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("new")})
		require.NoError(t, err)
		assert.Equal(t, "new", <-got)
	})
}

// TestConsumer_DuplicateMemberIDRefused: a second live consumer with the
// same member ID is refused instead of doubling every message; once the
// first one leaves (Close), the ID is free.
func TestConsumer_DuplicateMemberIDRefused(t *testing.T) {
	forTransports(t, testConsumer_DuplicateMemberIDRefused)
}

func testConsumer_DuplicateMemberIDRefused(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	col := newCollector()
	opts := func(who string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: "same", Subscriptions: []equeue.Subscription{{Topic: "t"}},
			HeartbeatInterval: 100 * time.Millisecond, Handler: col.handler(who)}
	}
	first := startConsumer(t, b, opts("first"))
	second, err := equeue.NewConsumer(b, opts("second"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = second.Close() })
	require.ErrorIs(t, second.Start(ctx), equeue.ErrMemberIDInUse)

	p := newProducer(t, b, nil)
	for range 40 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
		require.NoError(t, err)
	}
	eventually(t, 30*time.Second, func() bool { return col.count() >= 40 }, "handled %d of 40", func() any { return col.count() })
	require.NoError(t, first.Close())
	for id, who := range col.snapshot() {
		assert.Equal(t, []string{"first"}, who, "message %s", id)
	}
	assert.Equal(t, 40, col.count(), "nothing handled twice")

	require.NoError(t, second.Start(ctx), "the ID is free once its holder left")
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("y")})
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() bool { return col.count() == 41 }, "the second consumer handles new messages")
}

// TestConsumer_CrashedMemberRejoins: after a crash (no leave), a restart with
// the same member ID is refused while the crashed incarnation's session
// lasts, and succeeds once it expired.
func TestConsumer_CrashedMemberRejoins(t *testing.T) {
	forTransports(t, testConsumer_CrashedMemberRejoins)
}

func testConsumer_CrashedMemberRejoins(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", &equeue.Options{SessionTimeout: time.Second})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var handled atomic.Int64
	opts := equeue.ConsumerOptions{Group: "g", ID: "w", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		HeartbeatInterval: 100 * time.Millisecond, Handler: func(context.Context, *equeue.Message) error { handled.Add(1); return nil }}
	first, err := equeue.NewConsumer(b, opts)
	require.NoError(t, err)
	require.NoError(t, first.Start(ctx))
	equeue.CrashConsumer(first)

	restarted, err := equeue.NewConsumer(b, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = restarted.Close() })
	err = restarted.Start(ctx)
	require.ErrorIs(t, err, equeue.ErrMemberIDInUse, "the crashed incarnation's session has not expired yet")
	eventually(t, 30*time.Second, func() bool {
		err = restarted.Start(ctx)
		require.True(t, err == nil || errors.Is(err, equeue.ErrMemberIDInUse), "unexpected error: %v", err)
		return err == nil
	}, "the restart rejoins once the crashed session expired")
	p := newProducer(t, b, nil)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() bool { return handled.Load() == 1 }, "the restarted member consumes")
}

// TestGroup_StaleIncarnationLosesTheID: once a new incarnation took a
// member ID, the old one's heartbeats get ErrNotMember, and its rejoin is
// refused while the new one lives.
func TestGroup_StaleIncarnationLosesTheID(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{SessionTimeout: 100 * time.Millisecond})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	join := func(inc string) error {
		_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "w", Incarnation: inc, Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		return err
	}
	beat := func(inc string) error {
		_, err := e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "w", Incarnation: inc})
		return err
	}
	require.NoError(t, join("one"))
	require.NoError(t, join("one"), "the same incarnation may join again")
	require.ErrorIs(t, join("two"), equeue.ErrMemberIDInUse)
	eventually(t, 10*time.Second, func() bool { return join("two") == nil }, "a silent incarnation is gone after the session timeout")
	assert.ErrorIs(t, beat("one"), equeue.ErrNotMember)
	assert.ErrorIs(t, join("one"), equeue.ErrMemberIDInUse)
	assert.NoError(t, beat("two"))
	assert.NoError(t, beat(""), "a client without incarnations is not checked")
}

// partitionBroker blocks a member's heartbeats while cut is set, as a
// network partition would: the engine stops hearing from it.
type partitionBroker struct {
	equeue.Broker
	cut atomic.Bool
}

func (b *partitionBroker) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	if b.cut.Load() {
		<-ctx.Done()
		return equeue.Assignment{}, ctx.Err()
	}
	return b.Broker.Heartbeat(ctx, req)
}

// TestConsumer_StaleIncarnationDoesNotLeaveForTheNewOne: a member cut off
// long enough to expire is replaced by a restart with the same ID; when the
// old one is finally closed, it does not remove the new one from the group.
func TestConsumer_StaleIncarnationDoesNotLeaveForTheNewOne(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{SessionTimeout: 200 * time.Millisecond})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	opts := equeue.ConsumerOptions{Group: "g", ID: "w", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		HeartbeatInterval: 50 * time.Millisecond, Handler: func(context.Context, *equeue.Message) error { return nil }}
	pb := &partitionBroker{Broker: e}
	old := startConsumer(t, pb, opts)
	pb.cut.Store(true)
	restarted, err := equeue.NewConsumer(e, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = restarted.Close() })
	eventually(t, 30*time.Second, func() bool { return restarted.Start(ctx) == nil }, "the restart takes the ID once the old session expired")
	eventually(t, 30*time.Second, func() bool { return len(statsOf(restarted, "t")) == 1 }, "the restart owns the queue")
	before, err := e.Group(ctx, "g")
	require.NoError(t, err)
	pb.cut.Store(false)
	require.NoError(t, old.Close())
	after, err := e.Group(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, before.Epoch, after.Epoch, "the group did not change: the old incarnation did not leave in the new one's name")
	require.Len(t, after.Members, 1)
	assert.Equal(t, "w", after.Members[0].ID)
}

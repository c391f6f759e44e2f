package equeue_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

func TestCoordinator_EpochsAndFencing(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	join := func(id string) equeue.Assignment {
		a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: id, Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		require.NoError(t, err)
		return a
	}
	a1 := join("m1")
	require.Len(t, a1.Queues, 4, "a lone member owns every queue")
	q0 := a1.Queues[0]
	_, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: q0.Queue, Group: "g", Member: "m1", Epoch: q0.Epoch})
	require.NoError(t, err)

	a2 := join("m2")
	assert.Greater(t, a2.Epoch, a1.Epoch, "epoch rises on join")
	assert.Empty(t, a2.Queues, "m1 still holds the queues m2 is due")
	assert.Equal(t, 2, a2.Pending)

	// m2 may not pull or commit a queue it does not own.
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 2, Group: "g", Member: "m2", Epoch: a2.Epoch})
	assert.ErrorIs(t, err, equeue.ErrFenced)
	err = e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m2", Offsets: []equeue.OffsetCommit{{Grant: equeue.Grant{QueueRef: equeue.QueueRef{Topic: "t", Queue: 2}, Epoch: a2.Epoch}, Offset: 0}}})
	assert.ErrorIs(t, err, equeue.ErrFenced)

	// m1 learns it must hand over queues 2 and 3, commits and releases them.
	hb, err := e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m1", KnownVersion: a1.Version})
	require.NoError(t, err)
	require.Len(t, hb.Queues, 2)
	assert.Equal(t, []int{0, 1}, []int{hb.Queues[0].Queue, hb.Queues[1].Queue})
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m1", Offsets: []equeue.OffsetCommit{{Grant: a1.Queues[2], Offset: 0}}}))
	require.NoError(t, e.ReleaseQueues(ctx, "g", "m1", []equeue.Grant{a1.Queues[2], a1.Queues[3]}))

	// After release the old grant is stale for m1...
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 2, Group: "g", Member: "m1", Epoch: a1.Queues[2].Epoch})
	assert.ErrorIs(t, err, equeue.ErrFenced)
	// ...and m2 owns the queues under the new epoch; its heartbeat returns at once.
	hb2, err := e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m2", KnownVersion: a2.Version, Wait: time.Minute})
	require.NoError(t, err)
	require.Len(t, hb2.Queues, 2)
	for _, g := range hb2.Queues {
		_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: g.Queue, Group: "g", Member: "m2", Epoch: g.Epoch})
		require.NoError(t, err)
	}
	// A pull that names an older epoch of a queue it owns is refused too.
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: hb2.Queues[0].Queue, Group: "g", Member: "m2", Epoch: hb2.Queues[0].Epoch - 1})
	assert.ErrorIs(t, err, equeue.ErrFenced)

	// Unknown members and groups.
	_, err = e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "ghost"})
	assert.ErrorIs(t, err, equeue.ErrNotMember)
	_, err = e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "nope", Member: "m1"})
	assert.ErrorIs(t, err, equeue.ErrGroupNotFound)
	assert.ErrorIs(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "ghost"}), equeue.ErrNotMember)
	_, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
	_, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "x", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Strategy: "nope"})
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
}

func TestCoordinator_SilentMemberExpires(t *testing.T) {
	forTransports(t, testCoordinator_SilentMemberExpires)
}

func testCoordinator_SilentMemberExpires(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", &equeue.Options{SessionTimeout: 300 * time.Millisecond})
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	// A member that joins and never heartbeats (a remote worker that died).
	// (A Consumer in clustering mode also subscribes to its retry topic.)
	// The first member sets where the new group starts: earliest, so the
	// messages sent below are delivered whenever the live member's grant lands.
	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "silent", From: equeue.ConsumeFromEarliest,
		Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: equeue.RetryTopic("g")}}})
	require.NoError(t, err)
	col := newCollector()
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: "live", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: col.handler("live"), HeartbeatInterval: 50 * time.Millisecond, From: equeue.ConsumeFromEarliest})
	eventually(t, 10*time.Second, func() bool {
		gi, err := e.Group(ctx, "g")
		require.NoError(t, err)
		return len(gi.Members) == 1 && gi.Members[0].ID == "live" && countTopic(gi.Members[0].Queues, "t") == 4
	}, "the silent member expired and its queues were reassigned")
	p := newProducer(t, b, nil)
	sendN(t, p, "t", 40, nil)
	eventually(t, 10*time.Second, func() bool { return col.count() == 40 }, "live member gets everything")
}

func TestCoordinator_QueueChangesRebalanceAtOnce(t *testing.T) {
	forTransports(t, testCoordinator_QueueChangesRebalanceAtOnce)
}

func testCoordinator_QueueChangesRebalanceAtOnce(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	col := newCollector()
	for _, id := range []string{"a", "b"} {
		startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: col.handler(id), HeartbeatInterval: time.Minute, From: equeue.ConsumeFromEarliest})
	}
	owned := func() map[string]int {
		gi, err := e.Group(ctx, "g")
		require.NoError(t, err)
		out := map[string]int{}
		for _, m := range gi.Members {
			out[m.ID] = countTopic(m.Queues, "t")
		}
		return out
	}
	eventually(t, 10*time.Second, func() bool { o := owned(); return o["a"] == 1 && o["b"] == 1 }, "1+1")
	before, err := e.Group(ctx, "g")
	require.NoError(t, err)
	require.NoError(t, e.AddQueues(ctx, "t", 4))
	// Heartbeats are a minute apart: only an immediate rebalance (woken
	// long-poll) can hand out the new queues in time.
	eventually(t, 10*time.Second, func() bool { o := owned(); return o["a"] == 3 && o["b"] == 3 }, "3+3 after adding queues")
	after, err := e.Group(ctx, "g")
	require.NoError(t, err)
	assert.Greater(t, after.Epoch, before.Epoch)
	p := newProducer(t, b, nil)
	res := sendN(t, p, "t", 0, nil)
	for q := range 6 {
		r, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
		_ = r
	}
	_ = res
	eventually(t, 10*time.Second, func() bool { return col.count() == 6 }, "new queues are consumed")
}

func TestConsumer_ConsumeFrom(t *testing.T) { forTransports(t, testConsumer_ConsumeFrom) }

func testConsumer_ConsumeFrom(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, b, nil)
	sendN(t, p, "t", 10, nil)
	time.Sleep(20 * time.Millisecond)
	mark := time.Now()
	time.Sleep(20 * time.Millisecond)
	sendN(t, p, "t", 5, nil)

	latest, earliest, stamp, def := newCollector(), newCollector(), newCollector(), newCollector()
	startConsumer(t, b, equeue.ConsumerOptions{Group: "latest", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: latest.handler("l"), From: equeue.ConsumeFromLatest})
	startConsumer(t, b, equeue.ConsumerOptions{Group: "default", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: def.handler("d")})
	startConsumer(t, b, equeue.ConsumerOptions{Group: "earliest", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: earliest.handler("e"), From: equeue.ConsumeFromEarliest})
	startConsumer(t, b, equeue.ConsumerOptions{Group: "stamp", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: stamp.handler("s"), From: equeue.ConsumeFromTimestamp, FromTime: mark})
	sendN(t, p, "t", 3, nil)
	eventually(t, 10*time.Second, func() bool {
		return latest.count() == 3 && earliest.count() == 18 && stamp.count() == 8 && def.count() == 18
	}, "latest=%d earliest=%d stamp=%d default=%d", latest.count(), earliest.count(), stamp.count(), def.count())
}

// TestConsumer_SlidingWindow shows one slow message pins the committed
// offset while later messages complete, and the offset jumps once it ends.
func TestConsumer_SlidingWindow(t *testing.T) { forTransports(t, testConsumer_SlidingWindow) }

func testConsumer_SlidingWindow(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	release := make(chan struct{})
	var done atomic.Int64
	c := startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest,
		CommitInterval: time.Hour, Concurrency: 4,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			if m.Offset == 5 {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			done.Add(1)
			return nil
		}})
	p := newProducer(t, b, nil)
	sendN(t, p, "t", 20, nil)
	eventually(t, 10*time.Second, func() bool { return done.Load() == 19 }, "all but the slow one")
	waitWindow(t, c, "t", 5)
	require.NoError(t, c.Commit(ctx))
	assert.Equal(t, int64(5), startedCommit(t, e, "g"), "the slow message pins the committed offset")
	qs := statsOf(c, "t")
	require.Len(t, qs, 1)
	assert.Equal(t, 1, qs[0].Cached)
	assert.Positive(t, qs[0].OldestInFlight)
	close(release)
	eventually(t, 10*time.Second, func() bool { return done.Load() == 20 }, "slow one done")
	waitWindow(t, c, "t", 20)
	require.NoError(t, c.Commit(ctx))
	assert.Equal(t, int64(20), startedCommit(t, e, "g"), "the window slides to max+1")
}

func TestConsumer_FlowControlPausesPulling(t *testing.T) {
	forTransports(t, testConsumer_FlowControlPausesPulling)
}

func testConsumer_FlowControlPausesPulling(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, b, nil)
	sendN(t, p, "t", 300, nil)
	block := make(chan struct{})
	var started atomic.Int64
	c := startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest,
		MaxCachedMessages: 20, PullBatch: 8, Concurrency: 64,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			started.Add(1)
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil
		}})
	eventually(t, 10*time.Second, func() bool { return started.Load() >= 20 }, "cache filled")
	time.Sleep(200 * time.Millisecond) // room for the pull loop to overrun, if it would
	qs := statsOf(c, "t")
	require.Len(t, qs, 1)
	assert.LessOrEqual(t, qs[0].Cached, 20+8-1, "pulling pauses at the cached-message limit")
	assert.GreaterOrEqual(t, qs[0].Cached, 20)
	assert.LessOrEqual(t, started.Load(), int64(20+8-1), "idle workers get nothing beyond the limit")
	close(block)
	eventually(t, 10*time.Second, func() bool { return started.Load() == 300 }, "all handled after unblocking")

	// The span limit also pauses pulling in concurrent mode.
	require.NoError(t, e.CreateTopic(ctx, "s", 1))
	sendN(t, p, "s", 200, nil)
	hold := make(chan struct{})
	var seen atomic.Int64
	c2 := startConsumer(t, b, equeue.ConsumerOptions{Group: "g2", Subscriptions: []equeue.Subscription{{Topic: "s"}}, From: equeue.ConsumeFromEarliest,
		MaxSpan: 50, PullBatch: 10, Concurrency: 4,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			seen.Add(1)
			if m.Offset == 0 {
				select {
				case <-hold:
				case <-ctx.Done():
				}
			}
			return nil
		}})
	time.Sleep(300 * time.Millisecond)
	assert.LessOrEqual(t, seen.Load(), int64(50+10), "the span between the stuck offset 0 and the newest caps pulling")
	qs = statsOf(c2, "s")
	require.Len(t, qs, 1)
	assert.LessOrEqual(t, qs[0].Span, int64(50+10))
	close(hold)
	eventually(t, 10*time.Second, func() bool { return seen.Load() == 200 }, "all handled")
}

func TestAdmin_GroupsLagAndResetOffsets(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	p := newProducer(t, e, nil)
	for q := range 2 {
		for range 10 {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{Body: []byte("x")}}})
			require.NoError(t, err)
		}
	}
	col := newCollector()
	c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: col.handler("m"), From: equeue.ConsumeFromEarliest})
	eventually(t, 10*time.Second, func() bool { return col.count() == 20 }, "consumed")
	waitWindow(t, c, "t", 20)
	require.NoError(t, c.Commit(ctx))
	gs, err := e.Groups(ctx)
	require.NoError(t, err)
	require.Len(t, gs, 1)
	g := gs[0]
	assert.Equal(t, "g", g.Name)
	assert.Equal(t, equeue.Clustering, g.Model)
	require.Len(t, g.Members, 1)
	assert.Equal(t, 2, countTopic(g.Members[0].Queues, "t"))
	for _, q := range g.Queues {
		if q.Topic != "t" {
			continue
		}
		assert.Equal(t, "m", q.Owner)
		assert.Equal(t, int64(10), q.Committed)
		assert.Equal(t, int64(10), q.MaxOffset)
		assert.Zero(t, q.Lag)
	}

	// Reset a live group to earliest: the member gets everything again.
	require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	eventually(t, 10*time.Second, func() bool { return col.count() == 40 }, "redelivered after reset: %d", func() any { return col.count() })

	// Explicit offsets, and the reset is stored across a restart.
	require.NoError(t, c.Close())
	require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: map[equeue.QueueRef]int64{{Topic: "t", Queue: 1}: 7}}))
	assert.ErrorIs(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: map[equeue.QueueRef]int64{{Topic: "t", Queue: 1}: 99}}), equeue.ErrInvalidArgument)
	assert.ErrorIs(t, e.ResetOffsets(ctx, "nope", equeue.ResetRequest{}), equeue.ErrGroupNotFound)
	e = reopen()
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	lag := map[int]int64{}
	for _, q := range gi.Queues {
		if q.Topic == "t" {
			lag[q.Queue] = q.Lag
		}
	}
	assert.Equal(t, map[int]int64{0: 0, 1: 3}, lag)
	col2 := newCollector()
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: col2.handler("m")})
	eventually(t, 10*time.Second, func() bool { return col2.count() == 3 }, "resumes from the reset offset")
	_ = p

	// Reset to latest skips the backlog.
	require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToLatest}))
	gi, err = e.Group(ctx, "g")
	require.NoError(t, err)
	for _, q := range gi.Queues {
		assert.Zero(t, q.Lag)
	}
}

func TestPullConsumer_FetchCommitAndRebalance(t *testing.T) {
	forTransports(t, testPullConsumer_FetchCommitAndRebalance)
}

func testPullConsumer_FetchCommitAndRebalance(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	for q := range 2 {
		for i := range 5 {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "%d-%d", q, i)}}})
			require.NoError(t, err)
		}
	}
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "pg", ID: "p1", Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest, HeartbeatInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	defer pc.Close()
	require.Equal(t, []equeue.QueueRef{{Topic: "t", Queue: 0}, {Topic: "t", Queue: 1}}, pc.Assigned())
	q0 := equeue.QueueRef{Topic: "t", Queue: 0}
	msgs, err := pc.Fetch(ctx, q0, 3, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	assert.Equal(t, "0-0", string(msgs[0].Body))
	msgs, err = pc.Fetch(ctx, q0, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 2, "the position moved past the first fetch")
	require.NoError(t, pc.Commit(ctx, q0, 3))
	gi, err := e.Group(ctx, "pg")
	require.NoError(t, err)
	assert.Equal(t, int64(3), gi.Queues[0].Committed)

	// A second member takes queue 1 over; the first loses it at once.
	changed := pc.Changed()
	pc2, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "pg", ID: "p2", Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest, HeartbeatInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pc2.Start(ctx))
	defer pc2.Close()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no assignment change")
	}
	eventually(t, 10*time.Second, func() bool { return len(pc2.Assigned()) == 1 }, "p2 owns a queue")
	assert.Equal(t, []equeue.QueueRef{q0}, pc.Assigned())
	q1 := equeue.QueueRef{Topic: "t", Queue: 1}
	_, err = pc.Fetch(ctx, q1, 1, 0)
	assert.ErrorIs(t, err, equeue.ErrFenced)
	msgs, err = pc2.Fetch(ctx, q1, 10, 0)
	require.NoError(t, err)
	assert.Len(t, msgs, 5, "nothing of queue 1 was committed: p2 gets it all")
}

func TestHooks_SeeSendsAndHandling(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var mu sync.Mutex
	var events []string
	rec := func(s string) {
		mu.Lock()
		events = append(events, s)
		mu.Unlock()
	}
	hooks := equeue.Hooks{
		BeforeSend: func(_ context.Context, m *equeue.Message) {
			if m.Properties == nil {
				m.Properties = map[string]string{}
			}
			m.Properties["trace"] = "t-1"
			rec("before-send")
		},
		AfterSend: func(_ context.Context, _ *equeue.Message, r equeue.SendResult, err error) {
			rec(fmt.Sprintf("after-send %d %v", r.Offset, err))
		},
		BeforeHandle: func(_ context.Context, m *equeue.Message) { rec("before-handle " + m.Properties["trace"]) },
		AfterHandle: func(_ context.Context, _ *equeue.Message, err error, took time.Duration) {
			rec(fmt.Sprintf("after-handle %v %v", err, took > 0))
		},
	}
	done := make(chan struct{})
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Hooks: []equeue.Hooks{hooks},
		Handler: func(context.Context, *equeue.Message) error { close(done); return nil }})
	p := newProducer(t, e, &equeue.ProducerOptions{Hooks: []equeue.Hooks{hooks}})
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	<-done
	eventually(t, 5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(events) == 4 }, "4 events")
	assert.ElementsMatch(t, []string{"before-send", "after-send 0 <nil>", "before-handle t-1", "after-handle <nil> true"}, events)
	// Each side is ordered; the consumer may see the message before the
	// producer's AfterSend runs.
	pos := map[string]int{}
	for i, ev := range events {
		pos[ev] = i
	}
	assert.Less(t, pos["before-send"], pos["after-send 0 <nil>"])
	assert.Less(t, pos["before-send"], pos["before-handle t-1"])
	assert.Less(t, pos["before-handle t-1"], pos["after-handle <nil> true"])
}

// TestCoordinator_RevokesQueuesAMemberNeverSaw covers a member that was
// granted queues and had them re-targeted before it heartbeated: its next
// assignment lists them under Revoking so it can release them.
func TestCoordinator_RevokesQueuesAMemberNeverSaw(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 6))
	join := func(id string) equeue.Assignment {
		a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: id, Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		require.NoError(t, err)
		return a
	}
	a1 := join("m1")
	join("m2")
	// m1 hands 3, 4, 5 over; they are granted to m2, which does not look.
	require.NoError(t, e.ReleaseQueues(ctx, "g", "m1", a1.Queues[3:]))
	join("m3") // now 4 and 5 are due to m3
	a2, err := e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m2"})
	require.NoError(t, err)
	require.Len(t, a2.Revoking, 2)
	assert.Equal(t, 4, a2.Revoking[0].Queue)
	assert.Equal(t, 5, a2.Revoking[1].Queue)
	require.NoError(t, e.ReleaseQueues(ctx, "g", "m2", a2.Revoking))
	a3, err := e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m3"})
	require.NoError(t, err)
	assert.Len(t, a3.Queues, 2)
}

// TestConsumer_BackToBackJoinsSettle starts three consumers at once, several
// times: every queue must end up consumed by its allocated owner.
func TestConsumer_BackToBackJoinsSettle(t *testing.T) {
	forTransports(t, testConsumer_BackToBackJoinsSettle)
}

func testConsumer_BackToBackJoinsSettle(t *testing.T, tr string) {
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			ctx := ctxT(t)
			e, b := openOver(t, tr, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 6))
			col := newCollector()
			var cs []*equeue.Consumer
			for _, id := range []string{"w1", "w2", "w3"} {
				cs = append(cs, startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
					Handler: col.handler(id), HeartbeatInterval: 5 * time.Second}))
			}
			eventually(t, 10*time.Second, func() bool {
				for _, c := range cs {
					if len(statsOf(c, "t")) != 2 {
						return false
					}
				}
				return true
			}, "each consumer runs 2 queues")
			p := newProducer(t, b, nil)
			sendN(t, p, "t", 0, nil)
			for q := range 6 {
				_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{Body: []byte("x")}}})
				require.NoError(t, err)
			}
			eventually(t, 10*time.Second, func() bool { return col.count() == 6 }, "every queue consumed")
		})
	}
}

func TestPullConsumer_PositionMovesPastFilteredMessages(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for _, tag := range []string{"A", "B", "B", "B"} {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Tag: tag}}})
		require.NoError(t, err)
	}
	pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "pg", Subscriptions: []equeue.Subscription{{Topic: "t", Filter: "A"}}, From: equeue.ConsumeFromEarliest})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	defer pc.Close()
	q := equeue.QueueRef{Topic: "t"}
	msgs, err := pc.Fetch(ctx, q, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	pos, ok := pc.Position(q)
	require.True(t, ok)
	assert.Equal(t, int64(4), pos, "the position moved past the B messages")
	require.NoError(t, pc.Commit(ctx, q, pos))
	gi, err := e.Group(ctx, "pg")
	require.NoError(t, err)
	assert.Zero(t, gi.Queues[0].Lag)
	_, ok = pc.Position(equeue.QueueRef{Topic: "t", Queue: 9})
	assert.False(t, ok)
}

// A group with no live member is not rebalanced when its topics change,
// so its remembered queue list went stale: Group (and the lag metrics)
// left out queues added since its last member left, and ResetOffsets
// did not move them (a reset to the latest message then still delivered
// what they held) or failed outright once a subscribed topic was deleted.
// Stopping the consumers and resetting is the usual way to reset a group.
func TestAdmin_IdleGroupFollowsItsTopicsChanges(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.CreateTopic(ctx, "gone", 1))
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "b", Member: "m", Model: equeue.Broadcasting,
		Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: "gone"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 2)
	_, err = e.FetchOffsets(ctx, "b", "m", a.Queues)
	require.NoError(t, err)
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "b", Member: "m"}))

	// With no member left: a queue is added, and filled; a topic goes.
	require.NoError(t, e.AddQueues(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{{Body: []byte("x")}, {Body: []byte("y")}}})
	require.NoError(t, err)
	require.NoError(t, e.DeleteTopic(ctx, "gone"))

	gi, err := e.Group(ctx, "b")
	require.NoError(t, err)
	rows := map[equeue.QueueRef]equeue.GroupQueueInfo{}
	for _, q := range gi.Queues {
		rows[q.QueueRef] = q
	}
	added := equeue.QueueRef{Topic: "t", Queue: 1}
	assert.Contains(t, rows, added, "the added queue is listed")
	assert.Equal(t, int64(2), rows[added].Lag, "with its messages as lag")
	assert.NotContains(t, rows, equeue.QueueRef{Topic: "gone", Queue: 0}, "the deleted topic is not")

	require.NoError(t, e.ResetOffsets(ctx, "b", equeue.ResetRequest{To: equeue.ResetToLatest}), "a reset of the idle group")
	a, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: "b", Member: "m", Model: equeue.Broadcasting,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	offs, err := e.FetchOffsets(ctx, "b", "m", a.Queues)
	require.NoError(t, err)
	for _, o := range offs {
		if o.QueueRef == added {
			assert.Equal(t, int64(2), o.Offset, "the reset moved the added queue to its end")
		}
	}
}

// TestAdmin_GroupListsQueuesHeldDuringAHandover: while a member hands
// queues over, Group lists them with the member that still holds them, in
// the member list as in the queue rows: each queue shows one owner, the
// one that may pull and commit it.
func TestAdmin_GroupListsQueuesHeldDuringAHandover(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	join := func(id string) equeue.Assignment {
		a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: id, Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		require.NoError(t, err)
		return a
	}
	a1 := join("m1")
	join("m2") // m1 still holds queues 2 and 3, due to m2

	info, err := e.Group(ctx, "g")
	require.NoError(t, err)
	require.Len(t, info.Members, 2)
	held := map[equeue.QueueRef]string{}
	for _, m := range info.Members {
		for _, q := range m.Queues {
			held[q] = m.ID
		}
	}
	for _, q := range info.Queues {
		assert.Equal(t, q.Owner, held[q.QueueRef], "queue %s: the member list and the queue rows agree", q.QueueRef)
		assert.Equal(t, "m1", q.Owner, "queue %s is m1's until it releases it", q.QueueRef)
	}
	assert.Len(t, info.Members[0].Queues, 4, "m1 holds every queue: %+v", info.Members)
	assert.Empty(t, info.Members[1].Queues, "m2 holds none yet")

	// Once released, the queues are m2's in both.
	require.NoError(t, e.ReleaseQueues(ctx, "g", "m1", a1.Queues[2:]))
	info, err = e.Group(ctx, "g")
	require.NoError(t, err)
	require.Len(t, info.Members, 2)
	assert.Len(t, info.Members[0].Queues, 2)
	require.Len(t, info.Members[1].Queues, 2)
	assert.Equal(t, equeue.QueueRef{Topic: "t", Queue: 2}, info.Members[1].Queues[0])
	for _, q := range info.Queues {
		assert.Equal(t, map[bool]string{true: "m1", false: "m2"}[q.Queue < 2], q.Owner, "queue %s", q.QueueRef)
	}
}

// TestJoinGroup_SameTagsInAnotherOrderMatch: a tag filter is a set of
// tags, so members that list the same tags in another order (or once more)
// subscribe alike and share the group; other tags are still a mismatch.
func TestJoinGroup_SameTagsInAnotherOrderMatch(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	join := func(id, filter string) error {
		_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: id, Subscriptions: []equeue.Subscription{{Topic: "t", Filter: filter}}})
		return err
	}
	require.NoError(t, join("m1", "paid || shipped"))
	require.NoError(t, join("m2", "shipped || paid"))
	require.NoError(t, join("m3", "shipped||paid||shipped"))
	require.ErrorIs(t, join("m4", "paid"), equeue.ErrSubscriptionMismatch)
	require.ErrorIs(t, join("m4", "paid || shipped || refunded"), equeue.ErrSubscriptionMismatch)
	info, err := e.Group(ctx, "g")
	require.NoError(t, err)
	assert.Len(t, info.Members, 3)
}

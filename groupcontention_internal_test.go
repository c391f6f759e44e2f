package equeue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crowdedGroup opens an engine with topic "t" of queues queues and a
// clustering group "g" of members members, m000 on; it returns the
// engine, the group and each member's last answer. The session is an hour:
// no sweep expires anyone unless a test calls expire itself.
func crowdedGroup(tb testing.TB, members, queues int) (*Engine, *group, map[string]Assignment) {
	tb.Helper()
	e, err := Open("", &Options{InMemory: true, SessionTimeout: time.Hour})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, e.Close()) })
	ctx := context.Background()
	require.NoError(tb, e.CreateTopic(ctx, "t", queues))
	for i := range members {
		_, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: fmt.Sprintf("m%03d", i), Subscriptions: []Subscription{{Topic: "t"}}})
		require.NoError(tb, err)
	}
	g, err := e.groups.group("g")
	require.NoError(tb, err)
	answers := map[string]Assignment{}
	for i := range members {
		id := fmt.Sprintf("m%03d", i)
		a, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: id})
		require.NoError(tb, err)
		answers[id] = a
	}
	return e, g, answers
}

// TestGroupContention_HeartbeatsGoOnWhileTheGroupLockIsHeld: while the
// group's lock is held (here by the test, as by a crowd of offset
// fetches, releases and pulls of the group queued on it under a starved
// machine), every member's heartbeat is answered, or held as a long-poll,
// and keeps the member alive; once the lock is free, an expiry sweep
// finds no member gone, and the group does not rebalance. Heartbeats
// queued behind the lock left the members' last heartbeat as it was, so
// that the sweep, once it had the lock, expired them and rebalanced the
// group: more releases and fetches, slower heartbeats, more expiries.
func TestGroupContention_HeartbeatsGoOnWhileTheGroupLockIsHeld(t *testing.T) {
	const members = 150
	e, g, answers := crowdedGroup(t, members, 64)
	ids := make([]string, 0, members)
	for id := range answers {
		ids = append(ids, id)
	}
	// Every member last heartbeat two sessions ago, as on a machine whose
	// heartbeats slowed down.
	long := time.Now().Add(-2 * time.Hour).UnixNano()
	g.mu.Lock()
	epoch := g.epoch
	for _, m := range g.members {
		m.lastSeen.Store(long)
	}
	var unlock sync.Once
	free := func() { unlock.Do(g.mu.Unlock) }
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg       sync.WaitGroup
		answered atomic.Int64
		wrong    = make(chan string, members)
	)
	defer func() { free(); cancel(); wg.Wait() }()
	for i, id := range ids {
		known := answers[id]
		wg.Go(func() {
			if i%2 == 0 { // answered at once
				a, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: id})
				if err != nil || a.Version != known.Version || !assert.ObjectsAreEqual(known.Queues, a.Queues) || a.Epoch != known.Epoch {
					wrong <- fmt.Sprintf("%s: %+v, %v; known %+v", id, a, err, known)
					return
				}
				answered.Add(1)
				return
			}
			// A long-poll: held until the test ends.
			_, _ = e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: id, KnownVersion: known.Version, Wait: time.Hour})
		})
	}
	alive := func() int {
		n := 0
		for _, m := range g.members { // the test holds g.mu
			if m.lastSeen.Load() > long {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if answered.Load() == members/2 && alive() == members {
			break
		}
	}
	require.Equal(t, []int{members / 2, members}, []int{int(answered.Load()), alive()},
		"heartbeats answered and members seen while the group's lock was held")
	select {
	case w := <-wrong:
		t.Fatalf("a heartbeat answered wrong: %s", w)
	default:
	}
	free()

	e.groups.expire(time.Now())
	g.mu.Lock()
	left, now := len(g.members), g.epoch
	g.mu.Unlock()
	assert.Equal(t, members, left, "members expired though they heartbeat")
	assert.Equal(t, epoch, now, "the group rebalanced")
}

// BenchmarkGroupContention_Heartbeats times a heartbeat of a member of a
// clustering group of 150 members on 64 queues, alone ("idle") and while
// 16 goroutines keep fetching offsets of the group's grants, releasing
// queues not held (which takes the group's lock all the same) and fencing
// pulls ("crowded"), as a group's members do at every handover on a busy
// server, and ("stalled") while one goroutine holds the group's lock for a
// millisecond at a time, as a holder the operating system took the CPU
// from does on a starved machine. ns/op is a heartbeat; max-µs is the
// slowest heartbeat, and crowd-calls/op how many calls of the crowd (or
// holds of the lock) ran per heartbeat.
//
//	go test -run '^$' -bench BenchmarkGroupContention -cpu 1,2 .
func BenchmarkGroupContention_Heartbeats(b *testing.B) {
	b.Run("idle", func(b *testing.B) { benchHeartbeatsBeside(b, 0, false) })
	b.Run("crowded", func(b *testing.B) { benchHeartbeatsBeside(b, 16, false) })
	b.Run("stalled", func(b *testing.B) { benchHeartbeatsBeside(b, 0, true) })
}

func benchHeartbeatsBeside(b *testing.B, crowd int, stall bool) {
	const members = 150
	e, g, answers := crowdedGroup(b, members, 64)
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg    sync.WaitGroup
		calls atomic.Int64
	)
	defer wg.Wait()
	defer cancel()
	if stall {
		wg.Go(func() {
			for ctx.Err() == nil {
				g.mu.Lock()
				time.Sleep(time.Millisecond)
				g.mu.Unlock()
				calls.Add(1)
			}
		})
	}
	var holders []Assignment
	for _, a := range answers {
		if len(a.Queues) > 0 {
			holders = append(holders, a)
		}
	}
	for w := range crowd {
		wg.Go(func() {
			for i := w; ctx.Err() == nil; i++ {
				a := holders[i%len(holders)]
				if _, err := e.FetchOffsets(ctx, "g", a.Member, a.Queues); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
				stale := []Grant{{QueueRef: a.Queues[0].QueueRef, Epoch: 0}} // passed by, under the lock
				if err := e.ReleaseQueues(ctx, "g", a.Member, stale); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
				_ = e.groups.checkOwner("g", a.Member, a.Queues[0].Epoch, a.Queues[0].Topic, a.Queues[0].Queue)
				calls.Add(3)
			}
		})
	}
	ids := make([]string, 0, members)
	for id := range answers {
		ids = append(ids, id)
	}
	var slowest time.Duration
	from := calls.Load()
	i := 0
	for b.Loop() {
		began := time.Now()
		if _, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: ids[i%members]}); err != nil {
			b.Fatal(err)
		}
		slowest = max(slowest, time.Since(began))
		i++
	}
	b.ReportMetric(float64(slowest.Microseconds()), "max-µs")
	b.ReportMetric(float64(calls.Load()-from)/float64(b.N), "crowd-calls/op")
}

package equeue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkScale_HeldHeartbeats joins a member to a clustering group of
// 1,000 members on 100 topics of two queues (200 queues) and makes it
// leave again, while every member holds a long-polling heartbeat; then
// every held heartbeat is cancelled. One op is the join, the leave and
// the end of the 1,000 heartbeats; answers/op counts the heartbeats the
// join and leave answered (the others end cancelled). The churning
// member sorts last: the allocation of the others does not change.
//
//	go test -run '^$' -bench 'BenchmarkScale_HeldHeartbeats' -benchmem -benchtime 20x .
func BenchmarkScale_HeldHeartbeats(b *testing.B) {
	const members, topics = 1000, 100
	e, err := Open("", &Options{InMemory: true, SessionTimeout: 2 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	ctx := context.Background()
	subs := make([]Subscription, 0, topics)
	for i := range topics {
		name := fmt.Sprintf("t%05d", i)
		if err := e.CreateTopic(ctx, name, 2); err != nil {
			b.Fatal(err)
		}
		subs = append(subs, Subscription{Topic: name})
	}
	ids := make([]string, members)
	for i := range members {
		ids[i] = fmt.Sprintf("m%04d", i)
		if _, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: ids[i], Subscriptions: subs}); err != nil {
			b.Fatal(err)
		}
	}
	g, err := e.groups.group("g")
	if err != nil {
		b.Fatal(err)
	}
	var answers atomic.Int64
	i := 0
	for b.Loop() {
		b.StopTimer()
		hctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, id := range ids {
			a, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: id})
			if err != nil {
				b.Fatal(err)
			}
			wg.Go(func() {
				if _, err := e.Heartbeat(hctx, &HeartbeatRequest{Group: "g", Member: id, KnownVersion: a.Version, Wait: time.Hour}); err == nil {
					answers.Add(1)
				}
			})
		}
		for held := 0; held < members; {
			held = 0
			g.mu.Lock()
			for _, id := range ids {
				if g.members[id].waiting.Load() > 0 {
					held++
				}
			}
			g.mu.Unlock()
		}
		b.StartTimer()
		m := fmt.Sprintf("z%d", i)
		i++
		if _, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: m, Subscriptions: subs}); err != nil {
			b.Fatal(err)
		}
		if err := e.LeaveGroup(ctx, &LeaveRequest{Group: "g", Member: m}); err != nil {
			b.Fatal(err)
		}
		cancel()
		wg.Wait()
	}
	b.ReportMetric(float64(answers.Load())/float64(b.N), "answers/op")
}

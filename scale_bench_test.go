package equeue_test

import (
	"fmt"
	"testing"

	"github.com/equeue-go/equeue"
)

// The scale benchmarks measure what one call costs when a user has many of
// something: 10,000 topics, 10,000 groups, or 1,000 members in one group.
// Each runs on an in-memory engine; one op is one call (or one join and
// leave), so ns/op and allocs/op compare across commits:
//
//	go test -run '^$' -bench 'BenchmarkScale_' -benchmem -benchtime 20x .

// scaleTopics is how many topics the listing benchmarks create.
const scaleTopics = 10000

// scaleEngine opens an in-memory engine holding topics topics of two
// queues each, named t00000, t00001, …
func scaleEngine(b *testing.B, topics int) *equeue.Engine {
	b.Helper()
	ctx := benchCtx(b)
	e := benchOpenEngine(b, "", &equeue.Options{InMemory: true})
	for i := range topics {
		if err := e.CreateTopic(ctx, fmt.Sprintf("t%05d", i), 2); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

// BenchmarkScale_Topics lists 10,000 topics: one op is one Engine.Topics.
func BenchmarkScale_Topics(b *testing.B) {
	ctx := benchCtx(b)
	e := scaleEngine(b, scaleTopics)
	for b.Loop() {
		ts, err := e.Topics(ctx)
		if err != nil || len(ts) != scaleTopics {
			b.Fatalf("Topics: %d topics, %v", len(ts), err)
		}
	}
	benchClose(b, e)
}

// BenchmarkScale_QueueStats reads the counters of 10,000 topics' queues:
// one op is one Engine.QueueStats.
func BenchmarkScale_QueueStats(b *testing.B) {
	e := scaleEngine(b, scaleTopics)
	for b.Loop() {
		if qs := e.QueueStats(); len(qs) != 2*scaleTopics {
			b.Fatalf("QueueStats: %d queues", len(qs))
		}
	}
	benchClose(b, e)
}

// BenchmarkScale_Groups lists 10,000 groups of one member each, each on
// its own topic: one op is one Engine.Groups.
func BenchmarkScale_Groups(b *testing.B) {
	const groups = 10000
	ctx := benchCtx(b)
	e := scaleEngine(b, groups)
	for i := range groups {
		_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: fmt.Sprintf("g%05d", i), Member: "m",
			Subscriptions: []equeue.Subscription{{Topic: fmt.Sprintf("t%05d", i)}}})
		if err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		gs, err := e.Groups(ctx)
		if err != nil || len(gs) != groups {
			b.Fatalf("Groups: %d groups, %v", len(gs), err)
		}
	}
	benchClose(b, e)
}

// scaleGroup opens an engine with topics topics of two queues each and a
// clustering group "g" of members members subscribed to all of them, and
// returns the engine and the subscriptions.
func scaleGroup(b *testing.B, members, topics int) (*equeue.Engine, []equeue.Subscription) {
	b.Helper()
	ctx := benchCtx(b)
	e := scaleEngine(b, topics)
	subs := make([]equeue.Subscription, 0, topics)
	for i := range topics {
		subs = append(subs, equeue.Subscription{Topic: fmt.Sprintf("t%05d", i)})
	}
	for i := range members {
		if _, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: fmt.Sprintf("m%04d", i), Subscriptions: subs}); err != nil {
			b.Fatal(err)
		}
	}
	return e, subs
}

// BenchmarkScale_MemberChurn joins a member to a group of 1,000 members and
// makes it leave again: one op is one JoinGroup and one LeaveGroup, each a
// rebalance of the whole group. The group subscribes to 1 or 100 topics of
// two queues each.
func BenchmarkScale_MemberChurn(b *testing.B) {
	const members = 1000
	for _, topics := range []int{1, 100} {
		b.Run(fmt.Sprintf("members=%d/topics=%d", members, topics), func(b *testing.B) {
			ctx := benchCtx(b)
			e, subs := scaleGroup(b, members, topics)
			i := 0
			for b.Loop() {
				m := fmt.Sprintf("churn%d", i)
				i++
				if _, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: m, Subscriptions: subs}); err != nil {
					b.Fatal(err)
				}
				if err := e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: m}); err != nil {
					b.Fatal(err)
				}
			}
			benchClose(b, e)
		})
	}
}

// BenchmarkScale_GroupMembers describes a group of 1,000 members on 100
// topics of two queues each: one op is one Engine.Group.
func BenchmarkScale_GroupMembers(b *testing.B) {
	const members = 1000
	ctx := benchCtx(b)
	e, _ := scaleGroup(b, members, 100)
	for b.Loop() {
		gi, err := e.Group(ctx, "g")
		if err != nil || len(gi.Members) != members {
			b.Fatalf("Group: %d members, %v", len(gi.Members), err)
		}
	}
	benchClose(b, e)
}

// BenchmarkScale_BroadcastCommit commits the offsets of every queue a
// broadcasting member reads, 500 topics of two queues each, in one
// CommitOffsets: one op is one commit of 1,000 queues (each fenced by its
// grant).
func BenchmarkScale_BroadcastCommit(b *testing.B) {
	const topics = 500
	ctx := benchCtx(b)
	e := scaleEngine(b, topics)
	subs := make([]equeue.Subscription, 0, topics)
	for i := range topics {
		subs = append(subs, equeue.Subscription{Topic: fmt.Sprintf("t%05d", i)})
	}
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Model: equeue.Broadcasting, Subscriptions: subs})
	if err != nil {
		b.Fatal(err)
	}
	req := &equeue.CommitRequest{Group: "g", Member: "m"}
	for _, g := range a.Queues {
		req.Offsets = append(req.Offsets, equeue.OffsetCommit{Grant: g})
	}
	if len(req.Offsets) != 2*topics {
		b.Fatalf("%d queues granted", len(req.Offsets))
	}
	for b.Loop() {
		if err := e.CommitOffsets(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	benchClose(b, e)
}

// BenchmarkScale_RetentionKeepUnconsumed runs a retention pass that keeps
// unconsumed messages over n topics of two queues each, with n groups of
// one member each on its own topic: one op is one ApplyRetention. A queue's
// pass looks at the groups of its topic alone (it looked at every group,
// topics times groups, before the index of retentionfloor.go).
func BenchmarkScale_RetentionKeepUnconsumed(b *testing.B) {
	for _, n := range []int{500, 2000} {
		b.Run(fmt.Sprintf("topics=groups=%d", n), func(b *testing.B) {
			ctx := benchCtx(b)
			e := scaleEngine(b, n)
			for i := range n {
				_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: fmt.Sprintf("g%05d", i), Member: "m",
					Subscriptions: []equeue.Subscription{{Topic: fmt.Sprintf("t%05d", i)}}})
				if err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{KeepUnconsumed: true}); err != nil {
					b.Fatal(err)
				}
			}
			benchClose(b, e)
		})
	}
}

package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// groupMember runs a franz-go group consumer that commits what it polled
// before it lets a rebalance proceed, so a clean rebalance hands over
// exactly the committed position.
type groupMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startMember(t *testing.T, addr, group, topic string, got func(*kgo.Record)) *groupMember {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.BlockRebalanceOnPoll(), kgo.DisableAutoCommit(), kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.SessionTimeout(10*time.Second), kgo.FetchMaxWait(500*time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	m := &groupMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 50)
			recs := fs.Records()
			for _, r := range recs {
				got(r)
			}
			if len(recs) > 0 {
				if err := cl.CommitRecords(context.Background(), recs...); err != nil {
					t.Errorf("commit: %v", err)
				}
			}
			cl.AllowRebalance()
		}
	}()
	return m
}

// stop ends the poll loop and closes the client, which leaves the group.
func (m *groupMember) stop() {
	m.cancel()
	<-m.done
	m.cl.AllowRebalance()
	m.cl.Close()
}

// TestKgo_GroupOfThreeEveryMessageOnce: members join one by one, one
// leaves, while messages keep coming; every message is handled exactly
// once because each rebalance is clean (commit before revoke).
func TestKgo_GroupOfThreeEveryMessageOnce(t *testing.T) {
	e, addr := setup(t, map[string]int{"jobs": 6})
	ctx := testCtx(t)
	const total = 600
	var (
		mu     sync.Mutex
		counts = map[string]int{}
		by     = map[string]map[string]bool{}
		all    = make(chan struct{})
	)
	got := func(name string) func(*kgo.Record) {
		return func(r *kgo.Record) {
			mu.Lock()
			defer mu.Unlock()
			counts[string(r.Value)]++
			if by[name] == nil {
				by[name] = map[string]bool{}
			}
			by[name][string(r.Value)] = true
			if len(counts) == total {
				select {
				case <-all:
				default:
					close(all)
				}
			}
		}
	}
	progress := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(counts)
	}
	send := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "jobs", Queue: i % 6, Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "m%03d", i)}}})
			require.NoError(t, err)
		}
	}
	send(0, 200)
	a := startMember(t, addr, "workers", "jobs", got("a"))
	defer a.stop()
	require.Eventually(t, func() bool { return progress() > 0 }, 30*time.Second, 10*time.Millisecond)
	b := startMember(t, addr, "workers", "jobs", got("b"))
	c := startMember(t, addr, "workers", "jobs", got("c"))
	defer c.stop()
	adm := kadmin(t, addr)
	require.Eventually(t, func() bool {
		gs, err := adm.DescribeGroups(ctx, "workers")
		require.NoError(t, err)
		g := gs["workers"]
		if g.State != "Stable" || len(g.Members) != 3 {
			return false
		}
		for _, m := range g.Members {
			if ca, ok := m.Assigned.AsConsumer(); !ok || len(ca.Topics) == 0 || len(ca.Topics[0].Partitions) == 0 {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "three members share the partitions")
	send(200, 400)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(by["b"]) > 0 && len(by["c"]) > 0
	}, 30*time.Second, 10*time.Millisecond, "every member gets partitions")
	b.stop()
	send(400, total)
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatalf("only %d of %d messages consumed", progress(), total)
	}
	mu.Lock()
	defer mu.Unlock()
	for v, n := range counts {
		assert.Equal(t, 1, n, "message %s handled %d times", v, n)
	}
	assert.Len(t, counts, total)
}

// TestKgo_CommitRestartResume: a group commits part of a topic, the engine
// (on disk) and listener restart, and a new member resumes after the last
// committed offset.
func TestKgo_CommitRestartResume(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	func() {
		e, err := equeue.Open(dir, nil)
		require.NoError(t, err)
		defer func() { require.NoError(t, e.Close()) }()
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		for i := range 10 {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "m%d", i)}}})
			require.NoError(t, err)
		}
		addr := serveOnce(t, e)
		cl := kclient(t, addr, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.DisableAutoCommit())
		recs := pollN(ctx, t, cl, 4)
		require.NoError(t, cl.CommitRecords(ctx, recs[3]))
		cl.Close()
		offs, err := e.GroupOffsets(ctx, "g")
		require.NoError(t, err)
		assert.Equal(t, int64(4), offs[equeue.QueueRef{Topic: "t", Queue: 0}])
	}()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	addr := serve(t, e, nil)
	adm0 := kadmin(t, addr)
	listed, err := adm0.ListGroups(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"g"}, listed.Groups(), "the stored group is listed after the restart")
	described, err := adm0.DescribeGroups(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, "Empty", described["g"].State)
	cl := kclient(t, addr, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.DisableAutoCommit())
	recs := pollN(ctx, t, cl, 6)
	assert.Equal(t, "m4", string(recs[0].Value))
	assert.Equal(t, int64(4), recs[0].Offset)
	adm := kadmin(t, addr)
	lag, err := adm.FetchOffsets(ctx, "g")
	require.NoError(t, err)
	o, ok := lag.Lookup("t", 0)
	require.True(t, ok)
	assert.Equal(t, int64(4), o.At)
}

// TestKgo_EmptyGroupsAreForgotten: a client that uses a new group ID each
// run (console consumers do) left a group in the coordinator's memory per
// run. An empty group is now forgotten after a while; one with committed
// offsets is still listed (from the engine) and resumes where it was.
func TestKgo_EmptyGroupsAreForgotten(t *testing.T) {
	kafka.SetEmptyGroupKeep(t, 3*time.Second)
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	for i := range 3 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "m%d", i)}}})
		require.NoError(t, err)
	}
	adm := kadmin(t, addr)
	names := func() []string {
		listed, err := adm.ListGroups(ctx)
		require.NoError(t, err)
		return listed.Groups()
	}
	// Five runs with groups of their own; the last commits.
	for i := range 5 {
		cl := kclient(t, addr, kgo.ConsumerGroup(fmt.Sprintf("run-%d", i)), kgo.ConsumeTopics("t"), kgo.DisableAutoCommit())
		recs := pollN(ctx, t, cl, 3)
		if i == 4 {
			require.NoError(t, cl.CommitRecords(ctx, recs[1]))
		}
		cl.Close()
		assert.Contains(t, names(), fmt.Sprintf("run-%d", i), "a group is known while it is fresh")
	}
	require.Eventually(t, func() bool {
		n := names()
		return len(n) == 1 && n[0] == "run-4"
	}, 30*time.Second, 50*time.Millisecond, "only the group with offsets is left")

	cl := kclient(t, addr, kgo.ConsumerGroup("run-4"), kgo.ConsumeTopics("t"), kgo.DisableAutoCommit())
	recs := pollN(ctx, t, cl, 1)
	assert.Equal(t, "m2", string(recs[0].Value), "the forgotten group resumes at its commit")
	described, err := adm.DescribeGroups(ctx, "run-4")
	require.NoError(t, err)
	assert.Equal(t, "Stable", described["run-4"].State)
}

package equeue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// holdBroker holds a member's FetchOffsets, once armed, until released
// (or its context ends), as a slow broker would: a time-start fallback
// that reads many records, a remote server starved of CPU. It counts the
// heartbeats answered meanwhile.
type holdBroker struct {
	equeue.Broker
	mu       sync.Mutex
	hold     chan struct{} // non-nil: FetchOffsets waits for it to close
	entered  chan struct{} // closed when a FetchOffsets begins to wait
	signaled bool          // entered is closed
	holding  atomic.Bool
	answered atomic.Int64 // heartbeats answered while a FetchOffsets waited
}

// arm makes the next FetchOffsets wait until release.
func (b *holdBroker) arm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hold = make(chan struct{})
	b.entered = make(chan struct{})
	b.signaled = false
}

// release lets the waiting FetchOffsets (and later ones) go on.
func (b *holdBroker) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hold != nil {
		close(b.hold)
		b.hold = nil
	}
}

// waitEntered waits until a FetchOffsets waits; an error from failed
// (a Start's) ends the wait first.
func (b *holdBroker) waitEntered(t *testing.T, failed <-chan error) {
	t.Helper()
	b.mu.Lock()
	entered := b.entered
	b.mu.Unlock()
	select {
	case <-entered:
	case err := <-failed:
		t.Fatalf("returned before a FetchOffsets was held: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no FetchOffsets came to be held")
	}
}

func (b *holdBroker) FetchOffsets(ctx context.Context, group, member string, grants []equeue.Grant) ([]equeue.OffsetCommit, error) {
	b.mu.Lock()
	hold := b.hold
	if hold != nil && !b.signaled {
		b.signaled = true // only the first call signals
		b.holding.Store(true)
		close(b.entered)
	}
	b.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			b.holding.Store(false)
			return nil, ctx.Err()
		}
		b.holding.Store(false)
	}
	return b.Broker.FetchOffsets(ctx, group, member, grants)
}

func (b *holdBroker) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	a, err := b.Broker.Heartbeat(ctx, req)
	if err == nil && b.holding.Load() {
		b.answered.Add(1)
	}
	return a, err
}

// memberQueues returns the group's epoch and the queues of topic that
// GroupInfo lists for each member, sorted.
func memberQueues(t *testing.T, e *equeue.Engine, group, topic string) (int64, map[string][]equeue.QueueRef) {
	t.Helper()
	info, err := e.Group(ctxT(t), group)
	require.NoError(t, err)
	out := map[string][]equeue.QueueRef{}
	for _, m := range info.Members {
		out[m.ID] = []equeue.QueueRef{}
		for _, q := range m.Queues {
			if q.Topic == topic {
				out[m.ID] = append(out[m.ID], q)
			}
		}
		slices.SortFunc(out[m.ID], func(a, b equeue.QueueRef) int { return a.Queue - b.Queue })
	}
	return info.Epoch, out
}

// consumerRefs returns the queues of topic a consumer runs now, sorted.
func consumerRefs(c *equeue.Consumer, topic string) []equeue.QueueRef {
	refs := []equeue.QueueRef{}
	for _, s := range statsOf(c, topic) {
		refs = append(refs, s.QueueRef)
	}
	slices.SortFunc(refs, func(a, b equeue.QueueRef) int { return a.Queue - b.Queue })
	return refs
}

const (
	holdSession   = time.Second
	holdHeartbeat = 100 * time.Millisecond
)

// TestConsumer_HeartbeatsGoOnWhileAnAssignmentIsApplied: a member whose
// FetchOffsets for queues it was just granted (another member left) takes
// longer than the engine's session timeout keeps heartbeating meanwhile,
// so the engine does not expire it: the group's epoch stays, the member
// stays listed with its queues and the other member gets none of them.
// Once the call returns, the queues start and every message is handled
// once. Before, the member applied its assignment inside its heartbeat
// loop and sent no heartbeat until the call returned.
func TestConsumer_HeartbeatsGoOnWhileAnAssignmentIsApplied(t *testing.T) {
	forTransports(t, testConsumer_HeartbeatsGoOnWhileAnAssignmentIsApplied)
}

func testConsumer_HeartbeatsGoOnWhileAnAssignmentIsApplied(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", &equeue.Options{SessionTimeout: holdSession})
	require.NoError(t, e.CreateTopic(ctx, "t", 6))
	col := newCollector()
	hb := &holdBroker{Broker: b}
	sub := []equeue.Subscription{{Topic: "t"}}
	opts := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: sub, Handler: col.handler(id), HeartbeatInterval: holdHeartbeat}
	}
	c1 := startConsumer(t, hb, opts("c1"))
	c2 := startConsumer(t, b, opts("c2"))
	c3 := startConsumer(t, b, opts("c3"))
	eventually(t, 30*time.Second, func() bool {
		return len(statsOf(c1, "t")) == 2 && len(statsOf(c2, "t")) == 2 && len(statsOf(c3, "t")) == 2
	}, "each member runs two queues")

	hb.arm()
	require.NoError(t, c2.Close())
	hb.waitEntered(t, nil)
	epoch, held := memberQueues(t, e, "g", "t")
	require.Len(t, held["c1"], 3, "c1 was granted one of c2's queues")
	time.Sleep(3 * holdSession) // the FetchOffsets is held for three sessions

	after, members := memberQueues(t, e, "g", "t")
	assert.Equal(t, epoch, after, "no rebalance while c1 applied its assignment")
	assert.Equal(t, held["c1"], members["c1"], "c1 is still a member with its queues")
	for _, q := range members["c3"] {
		assert.NotContains(t, held["c1"], q, "c3 got none of c1's queues")
	}
	for _, q := range consumerRefs(c3, "t") {
		assert.NotContains(t, held["c1"], q, "c3 runs none of c1's queues")
	}
	assert.Positive(t, hb.answered.Load(), "heartbeats were answered while the call was held")

	p := newProducer(t, b, nil)
	const n = 60
	for i := range n {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%d", i)})
		require.NoError(t, err)
	}
	hb.release()
	eventually(t, 30*time.Second, func() bool { return slices.Equal(consumerRefs(c1, "t"), held["c1"]) },
		"c1 runs its queues", func() any { return consumerRefs(c1, "t") })
	eventually(t, 30*time.Second, func() bool { return col.count() >= n }, "every message handled", func() any { return col.count() })
	assert.Equal(t, n, col.distinct())
	for id, by := range col.snapshot() {
		assert.Len(t, by, 1, "message %s handled once", id)
	}
}

// TestConsumer_HeartbeatsGoOnWhileStartAppliesItsGrants: the same for the
// queues granted at Start: a FetchOffsets of them that outlasts the
// session does not let the engine expire the member that is starting.
func TestConsumer_HeartbeatsGoOnWhileStartAppliesItsGrants(t *testing.T) {
	forTransports(t, testConsumer_HeartbeatsGoOnWhileStartAppliesItsGrants)
}

// startThroughAHeldFetch stores n messages on a topic "t" of 4 queues,
// makes a member id of group "g" with newMember over a broker that holds
// its first FetchOffsets, and starts it: while Start's fetch is held for
// three session timeouts, the group's epoch must stay, the member keep
// its queues and its heartbeats be answered. It then releases the fetch,
// checks that Start succeeded, and returns the member's queues.
func startThroughAHeldFetch(t *testing.T, tr, id string, n int, newMember func(equeue.Broker) (start func(context.Context) error, stop func() error)) []equeue.QueueRef {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", &equeue.Options{SessionTimeout: holdSession})
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	p := newProducer(t, b, nil)
	for i := range n {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%d", i)})
		require.NoError(t, err)
	}
	hb := &holdBroker{Broker: b}
	hb.arm()
	start, stop := newMember(hb)
	t.Cleanup(func() { _ = stop() })
	started := make(chan error, 1)
	go func() { started <- start(ctx) }()
	hb.waitEntered(t, started)
	epoch, held := memberQueues(t, e, "g", "t")
	require.Len(t, held[id], 4)
	time.Sleep(3 * holdSession) // the FetchOffsets is held for three sessions

	after, members := memberQueues(t, e, "g", "t")
	assert.Equal(t, epoch, after, "no rebalance while Start applied the grants")
	assert.Equal(t, held[id], members[id], "%s is still a member with its queues", id)
	assert.Positive(t, hb.answered.Load(), "heartbeats were answered while the call was held")

	hb.release()
	require.NoError(t, <-started)
	return held[id]
}

func testConsumer_HeartbeatsGoOnWhileStartAppliesItsGrants(t *testing.T, tr string) {
	const n = 40
	col := newCollector()
	var c *equeue.Consumer
	startThroughAHeldFetch(t, tr, "c1", n, func(b equeue.Broker) (func(context.Context) error, func() error) {
		var err error
		c, err = equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "c1", Subscriptions: []equeue.Subscription{{Topic: "t"}},
			Handler: col.handler("c1"), HeartbeatInterval: holdHeartbeat})
		require.NoError(t, err)
		return c.Start, c.Close
	})
	assert.Len(t, statsOf(c, "t"), 4, "Start returned with the granted queues running")
	eventually(t, 30*time.Second, func() bool { return col.count() >= n }, "every message handled", func() any { return col.count() })
	assert.Equal(t, n, col.distinct())
	assert.Equal(t, n, col.count(), "each message handled once")
}

// TestConsumer_AssignmentThatComesWhileOneIsAppliedIsNotLost: while an
// orderly member's FetchOffsets of queues it was just granted is held, a
// new member joins and takes some of them; the member's heartbeats bring
// that newer assignment meanwhile. Once the call returns, the member
// applies the newer one after the held one: in the end each member runs
// just the queues the group lists for it, no queue runs on two members,
// and every message is handled once, in order per queue.
func TestConsumer_AssignmentThatComesWhileOneIsAppliedIsNotLost(t *testing.T) {
	forTransports(t, testConsumer_AssignmentThatComesWhileOneIsAppliedIsNotLost)
}

func testConsumer_AssignmentThatComesWhileOneIsAppliedIsNotLost(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", &equeue.Options{SessionTimeout: holdSession})
	require.NoError(t, e.CreateTopic(ctx, "t", 6))
	col := newCollector()
	hb := &holdBroker{Broker: b}
	sub := []equeue.Subscription{{Topic: "t"}}
	opts := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: sub, Handler: col.handler(id), HeartbeatInterval: holdHeartbeat, Orderly: true}
	}
	cs := map[string]*equeue.Consumer{"c1": startConsumer(t, hb, opts("c1")), "c2": startConsumer(t, b, opts("c2"))}
	eventually(t, 30*time.Second, func() bool {
		return len(statsOf(cs["c1"], "t")) == 3 && len(statsOf(cs["c2"], "t")) == 3
	}, "each member runs three queues")

	hb.arm()
	require.NoError(t, cs["c2"].Close())
	delete(cs, "c2")
	hb.waitEntered(t, nil)
	epoch, _ := memberQueues(t, e, "g", "t")
	cs["c3"] = startConsumer(t, b, opts("c3"))
	eventually(t, 30*time.Second, func() bool {
		after, _ := memberQueues(t, e, "g", "t")
		return after > epoch
	}, "c3 joined")
	time.Sleep(2 * holdSession) // the FetchOffsets is held past the session

	p := newProducer(t, b, nil)
	const n = 60
	for i := range n {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{fmt.Sprint(i % 6)}, Body: fmt.Appendf(nil, "%d", i)})
		require.NoError(t, err)
	}
	_, members := memberQueues(t, e, "g", "t")
	assert.ElementsMatch(t, []string{"c1", "c3"}, keys(members), "c1 was not expired")
	hb.release()
	runs := func() bool {
		_, members := memberQueues(t, e, "g", "t")
		for id, c := range cs {
			if !slices.Equal(consumerRefs(c, "t"), members[id]) {
				return false
			}
		}
		return len(members["c1"])+len(members["c3"]) == 6
	}
	eventually(t, 30*time.Second, runs, "each member runs the queues the group lists for it", func() any {
		_, members := memberQueues(t, e, "g", "t")
		return fmt.Sprint(members, " c1 runs ", consumerRefs(cs["c1"], "t"), " c3 runs ", consumerRefs(cs["c3"], "t"))
	})
	eventually(t, 30*time.Second, func() bool { return col.count() >= n }, "every message handled", func() any { return col.count() })
	assert.Equal(t, n, col.distinct())
	assert.Equal(t, n, col.count(), "each message handled once")
}

// keys returns m's keys.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// history records the outcome of every send of a test.
type history struct {
	mu      sync.Mutex
	acked   map[string]ack // value -> where it was acknowledged
	unknown map[string]bool
}

type ack struct {
	queue  int
	offset int64
}

func newHistory() *history {
	return &history{acked: map[string]ack{}, unknown: map[string]bool{}}
}

// sendOne sends value to queue on whichever node leads, retrying refusals
// (nothing stored) until ctx ends. An indeterminate outcome is recorded as
// unknown and not retried.
func (h *history) sendOne(ctx context.Context, c *testCluster, nodes func() []*cluster.Node, topic string, queue int, value string) {
	h.send(ctx, c, nodes, topic, queue, value, "")
}

func (h *history) send(ctx context.Context, c *testCluster, nodes func() []*cluster.Node, topic string, queue int, value, id string) {
	for ctx.Err() == nil {
		for _, n := range nodes() {
			if n == nil {
				continue
			}
			res, err := n.Append(ctx, &equeue.AppendRequest{Topic: topic, Queue: queue, Messages: []*equeue.Message{{ID: id, Body: []byte(value)}}})
			switch {
			case err == nil:
				h.mu.Lock()
				h.acked[value] = ack{queue: res.Queue, offset: res.FirstOffset}
				h.mu.Unlock()
				return
			case errors.Is(err, equeue.ErrNotLeader):
				continue
			case errors.Is(err, equeue.ErrIndeterminate), ctx.Err() != nil:
				// A send cut short by the test's end may be stored, too.
				h.mu.Lock()
				h.unknown[value] = true
				h.mu.Unlock()
				return
			default:
				if ctx.Err() == nil {
					c.t.Errorf("send %s: unexpected error %v", value, err)
				}
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sendAcked sends value (as its own message ID) until it is acknowledged:
// an unknown outcome (a leader change under load) is sent again, which a
// topic with a dedup window stores once.
func (h *history) sendAcked(ctx context.Context, c *testCluster, nodes func() []*cluster.Node, topic string, queue int, value string) {
	c.t.Helper()
	for range 20 {
		h.send(ctx, c, nodes, topic, queue, value, value)
		h.mu.Lock()
		_, ok := h.acked[value]
		delete(h.unknown, value)
		h.mu.Unlock()
		if ok {
			return
		}
	}
	c.t.Fatalf("%s not acknowledged after 20 tries", value)
}

func (h *history) ackedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.acked)
}

// check compares what every node stores with the history.
func (h *history) check(t *testing.T, stored []map[int][]string) {
	t.Helper()
	for i := 1; i < len(stored); i++ {
		assert.Equal(t, stored[0], stored[i], "node %d stores what node 1 stores", i+1)
	}
	for value, a := range h.acked {
		for i, s := range stored {
			q := s[a.queue]
			if assert.Less(t, a.offset, int64(len(q)), "node %d lost acknowledged %s", i+1, value) {
				assert.Equal(t, value, q[a.offset], "node %d: %s at its acknowledged offset", i+1, value)
			}
		}
	}
	seen := map[string]int{}
	for _, q := range stored[0] {
		for _, v := range q {
			seen[v]++
		}
	}
	for v, k := range seen {
		assert.Equal(t, 1, k, "%s stored once", v)
		_, ok := h.acked[v]
		assert.True(t, ok || h.unknown[v], "%s stored but never sent, or refused", v)
	}
}

func TestCluster_FailoverLosesNoAcknowledgedMessage(t *testing.T) {
	for _, ls := range []string{cluster.LogStoreBolt, cluster.LogStoreWAL} {
		t.Run(ls, func(t *testing.T) { testFailover(t, ls) })
	}
}

func testFailover(t *testing.T, logStore string) {
	c := newCluster(t, 3, func(o *cluster.Options) { o.LogStore = logStore })
	ctx := context.Background()
	c.createTopic(t, "jobs", 2)

	var mu sync.Mutex
	nodes := func() []*cluster.Node {
		mu.Lock()
		defer mu.Unlock()
		return append([]*cluster.Node(nil), c.nodes...)
	}
	h := newHistory()
	sendCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	var seq atomic.Int64
	for s := range 4 {
		wg.Go(func() {
			for sendCtx.Err() == nil {
				i := seq.Add(1)
				h.sendOne(sendCtx, c, nodes, "jobs", int(i%2), fmt.Sprintf("s%d-%d", s, i))
			}
		})
	}
	eventually(t, 30*time.Second, func() error {
		if h.ackedCount() < 200 {
			return errors.New("fewer than 200 acknowledged")
		}
		return nil
	})
	old := c.leaderIndex()
	firstTenures := c.nodes[old].Status().Tenures
	require.Positive(t, firstTenures)
	mu.Lock()
	c.stop(old)
	mu.Unlock()
	before := h.ackedCount()
	eventually(t, 30*time.Second, func() error {
		if h.ackedCount() < before+200 {
			return fmt.Errorf("%d acknowledged since the leader stopped", h.ackedCount()-before)
		}
		return nil
	})
	newLeader := c.leaderIndex()
	require.NotEqual(t, old, newLeader)
	mu.Lock()
	c.start(old, false) // rejoins and catches up
	mu.Unlock()
	more := h.ackedCount()
	eventually(t, 30*time.Second, func() error {
		if h.ackedCount() < more+100 {
			return errors.New("sends stalled after the old leader came back")
		}
		return nil
	})
	stop()
	wg.Wait()
	c.waitConverged()
	mu.Lock()
	c.closeAll()
	mu.Unlock()

	var stored []map[int][]string
	for _, dir := range c.dirs {
		stored = append(stored, readAll(t, dir, "jobs"))
	}
	for i, s := range stored {
		t.Logf("node %d: %d+%d messages", i+1, len(s[0]), len(s[1]))
	}
	h.check(t, stored)
	t.Logf("acknowledged %d, unknown %d", len(h.acked), len(h.unknown))
}

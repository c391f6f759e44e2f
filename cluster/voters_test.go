package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/testport"
)

// Voters are added and removed while producers send.
func TestCluster_AddAndRemoveVoterUnderLoad(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := context.Background()
	c.createTopic(t, "t", 2)
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
	for range 4 {
		wg.Go(func() {
			for sendCtx.Err() == nil {
				i := seq.Add(1)
				h.sendOne(sendCtx, c, nodes, "t", int(i%2), fmt.Sprintf("v%d", i))
			}
		})
	}
	progress := func(more int) {
		want := h.ackedCount() + more
		eventually(t, 30*time.Second, func() error {
			if h.ackedCount() < want {
				return fmt.Errorf("%d of %d acknowledged", h.ackedCount(), want)
			}
			return nil
		})
	}
	progress(100)

	// Add a fourth voter.
	mu.Lock()
	c.dirs = append(c.dirs, c.dirs[0]+"-4")
	c.addrs = append(c.addrs, testport.Addr(t))
	c.nodes = append(c.nodes, nil)
	c.start(3, false)
	mu.Unlock()
	c.addVoter(3)
	progress(100)

	// Remove the leader itself, then a follower.
	old := c.leaderIndex()
	eventually(t, 30*time.Second, func() error {
		return c.waitLeader().RemoveServer(ctx, c.id(old))
	})
	mu.Lock()
	c.stop(old)
	mu.Unlock()
	progress(100)
	var follower int
	for i, n := range nodes() {
		if n != nil && !n.Status().Serving {
			follower = i
			break
		}
	}
	eventually(t, 30*time.Second, func() error {
		return c.waitLeader().RemoveServer(ctx, c.id(follower))
	})
	mu.Lock()
	c.stop(follower)
	mu.Unlock()
	progress(100)
	stop()
	wg.Wait()

	servers := c.waitLeader().Status().Servers
	require.Len(t, servers, 2)
	c.waitConverged()
	mu.Lock()
	c.closeAll()
	mu.Unlock()
	var stored []map[int][]string
	for i, dir := range c.dirs {
		if i != old && i != follower {
			stored = append(stored, readAll(t, dir, "t"))
		}
	}
	h.check(t, stored)
}

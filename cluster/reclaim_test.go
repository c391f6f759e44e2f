package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/equeue-go/equeue/cluster"
)

// A follower's reclaim of its store (value-log GC, flattening the LSM
// tree: seconds to minutes on a large store) must not keep it from
// serving once it is elected. Before, the reclaim ran on the goroutine
// that opens the leader's engine: a node elected meanwhile led Raft and
// served nothing, and no other node could, until the reclaim ended.
func TestNode_FollowerReclaimDoesNotDelayServing(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	c := newCluster(t, 3, func(o *cluster.Options) {
		if o.ID != "n2" {
			return
		}
		cluster.SetFollowerReclaim(o, 10*time.Millisecond, func() {
			once.Do(func() {
				close(entered)
				<-release // a reclaim that takes long
			})
		})
	})
	// Registered after newCluster's: runs before the nodes close.
	t.Cleanup(func() { close(release) })
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("n2 never reclaimed as a follower")
	}

	n2 := c.nodes[1]
	eventually(t, 60*time.Second, func() error {
		if _, err := n2.Engine(); err == nil {
			return nil
		}
		for _, n := range c.nodes {
			if n != n2 && n.Status().Serving {
				if err := n.TransferLeadership(context.Background(), "n2"); err != nil {
					return fmt.Errorf("hand the leadership over to n2: %w", err)
				}
			}
		}
		return errors.New("n2 does not serve (raft state " + n2.Status().State + ")")
	})
}

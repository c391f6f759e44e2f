package cluster_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// heldWrite holds, while armed, the first write a leader's store admits
// that match picks, until the test has handed the leadership over.
type heldWrite struct {
	armed    atomic.Bool
	reached  chan struct{} // closed once the write is held
	proceed  chan struct{} // closed to let it go on
	reaching sync.Once
}

// newHeldWrite returns a heldWrite and the option that puts it on a node.
func newHeldWrite(match func(*store.Batch) bool) (*heldWrite, func(*cluster.Options)) {
	h := &heldWrite{reached: make(chan struct{}), proceed: make(chan struct{})}
	return h, func(o *cluster.Options) {
		cluster.SetAdmitHook(o, func(b *store.Batch) error {
			if h.armed.Load() && match(b) {
				h.reaching.Do(func() { close(h.reached) })
				<-h.proceed
			}
			return nil
		})
	}
}

// handOverUnder waits until the write is held on node i of c, hands the
// leadership over to the next node, and lets the write go on once node
// i no longer leads.
func (h *heldWrite) handOverUnder(t *testing.T, c *testCluster, i int) {
	t.Helper()
	select {
	case <-h.reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the write to hold was not made")
	}
	old := c.nodes[i]
	eventually(t, 20*time.Second, func() error {
		if old.Status().State != "Leader" {
			return nil
		}
		err := old.TransferLeadership(context.Background(), c.id((i+1)%len(c.nodes)))
		return errors.Join(errors.New("still leads"), err)
	})
	close(h.proceed)
	h.armed.Store(false)
}

// joinedGroup makes group "g" on node n, whose member "m" subscribed to
// topic "t" and the group's retry topic (which the join makes), and
// returns the member's grant of t/0. The member stays.
func joinedGroup(t *testing.T, n *cluster.Node) equeue.Grant {
	t.Helper()
	ctx := context.Background()
	a, err := n.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Model: equeue.Clustering,
		Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: equeue.RetryTopic("g")}}})
	require.NoError(t, err)
	var grant equeue.Grant
	eventually(t, 10*time.Second, func() error {
		a, err = n.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: a.Version})
		require.NoError(t, err)
		for _, g := range a.Queues {
			if g.Topic == "t" {
				grant = g
				return nil
			}
		}
		return errors.New("t/0 not granted yet")
	})
	return grant
}

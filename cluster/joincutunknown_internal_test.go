package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// A join cut short by the end of the tenure after it created a topic (a
// subscribed one, with AutoCreateTopics) did something: it is unknown
// (equeue.ErrIndeterminate), and so no refusal (equeue.ErrJoinRefused,
// "nothing to undo"); it matches exactly one of the two. Before, it
// matched both: the engine marked its not-leader error as a refusal, and
// the node wrapped that as unknown, the topics having changed.
func TestNode_JoinCutShortWhileTopicsChangedIsUnknownOnly(t *testing.T) {
	var armed, madeFirst atomic.Bool
	var n *Node
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		Engine: &equeue.Options{AutoCreateTopics: true},
		admitHook: func(b *store.Batch) error {
			switch {
			case !armed.Load():
			case holds(b, "auto-first"):
				madeFirst.Store(true)
			case holds(b, "auto-second") && armed.CompareAndSwap(true, false):
				n.mu.RLock()
				rs := n.rstore
				n.mu.RUnlock()
				rs.fence(errFenced) // the tenure ends before the second topic's write
			}
			return nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)

	armed.Store(true)
	_, err = n.JoinGroup(context.Background(), &equeue.JoinRequest{Group: "jg", Member: "m",
		Subscriptions: []equeue.Subscription{{Topic: "auto-first"}, {Topic: "auto-second"}}})
	require.True(t, madeFirst.Load(), "the join created its first topic (join: %v)", err)
	require.False(t, armed.Load(), "the tenure ended before its second (join: %v)", err)
	assert.ErrorIs(t, err, equeue.ErrIndeterminate, "the join did something")
	assert.ErrorIs(t, err, equeue.ErrNotLeader, "the node does not lead any more")
	assert.NotErrorIs(t, err, equeue.ErrJoinRefused, "unknown, not refused: %v", err)
}

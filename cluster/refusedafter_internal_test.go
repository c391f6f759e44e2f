package cluster

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// holds says whether b, a write of the engine, names name in a key or a
// value of its metadata (a topic's creation does).
func holds(b *store.Batch, name string) bool {
	for _, m := range b.Meta {
		if bytes.Contains(m.Key, []byte(name)) || bytes.Contains(m.Value, []byte(name)) {
			return true
		}
	}
	return false
}

// TestNode_JoinCutShortAfterItCreatedATopicIsNotARefusal: with
// AutoCreateTopics, a join that subscribes two new topics creates them,
// each in a replicated write of its own; the tenure ends (fenced) between
// the two, so the engine refuses the second topic's write as not leading.
// The call did something (the first topic is stored): it is answered with
// an error matching equeue.ErrIndeterminate, not as a refusal that did
// nothing. Before, the node answered it with a bare not-leader error.
func TestNode_JoinCutShortAfterItCreatedATopicIsNotARefusal(t *testing.T) {
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
	ctx := context.Background()

	armed.Store(true)
	_, err = n.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Model: equeue.Clustering,
		Subscriptions: []equeue.Subscription{{Topic: "auto-first"}, {Topic: "auto-second"}}})
	require.True(t, madeFirst.Load(), "the join created its first topic")
	require.False(t, armed.Load(), "the tenure ended before its second (join: %v)", err)
	require.ErrorIs(t, err, equeue.ErrIndeterminate, "a call that created a topic before it was refused did something")
	require.ErrorIs(t, err, equeue.ErrNotLeader, "the node does not lead any more: the call goes to the next leader")

	// The first topic is stored: the next tenure serves it.
	require.Eventually(t, func() bool {
		_, err := n.Topic(ctx, "auto-first")
		return err == nil
	}, time.Minute, 10*time.Millisecond)
}

// TestNode_AppendCutShortAfterItCreatedItsTopicIsNotARefusal: with
// AutoCreateTopics, an append to a new topic creates the topic, then
// writes its messages; the tenure ends between the two. The topic is
// stored: the call is answered with an error matching
// equeue.ErrIndeterminate, not as a refusal that did nothing.
func TestNode_AppendCutShortAfterItCreatedItsTopicIsNotARefusal(t *testing.T) {
	var armed, madeTopic atomic.Bool
	var n *Node
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		Engine: &equeue.Options{AutoCreateTopics: true},
		admitHook: func(b *store.Batch) error {
			switch {
			case !armed.Load():
			case holds(b, "auto-topic"):
				madeTopic.Store(true)
			case len(b.Entries) > 0 && madeTopic.Load() && armed.CompareAndSwap(true, false):
				n.mu.RLock()
				rs := n.rstore
				n.mu.RUnlock()
				rs.fence(errFenced) // the tenure ends before the messages' write
			}
			return nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	ctx := context.Background()

	armed.Store(true)
	_, err = n.Append(ctx, &equeue.AppendRequest{Topic: "auto-topic", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.True(t, madeTopic.Load(), "the append created its topic")
	require.False(t, armed.Load(), "the tenure ended before its messages' write (append: %v)", err)
	require.ErrorIs(t, err, equeue.ErrIndeterminate, "a call that created a topic before it was refused did something")

	require.Eventually(t, func() bool {
		_, err := n.Topic(ctx, "auto-topic")
		return err == nil
	}, time.Minute, 10*time.Millisecond)
}

package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// An in-process consumer running on the leader's engine, which the
// program leaves to the node's close (no OnEngine closes it), keeps its
// final commit: Node.Close lets the engine close its consumers before it
// fences the store, so after a reopen on the same directory a new member
// of the group gets nothing it had handled; on a cluster of three, the
// leader's close leaves that commit to the next leader. No periodic commit
// runs (CommitInterval of an hour): the final commit is the only one.
func TestNode_CloseKeepsTheFinalCommitOfTheLeadersConsumers(t *testing.T) {
	for _, nodes := range []int{1, 3} {
		t.Run(fmt.Sprintf("nodes=%d", nodes), func(t *testing.T) { testCloseKeepsTheFinalCommit(t, nodes) })
	}
}

func testCloseKeepsTheFinalCommit(t *testing.T, nodes int) {
	c := newCluster(t, nodes, nil)
	ctx := context.Background()
	c.createTopic(t, "t", 1)
	const n = 20
	var bodies [][]byte
	for i := range n {
		bodies = append(bodies, fmt.Appendf(nil, "before-%02d", i))
	}
	c.sendBatch(t, "t", 0, bodies)

	li := c.leaderIndex()
	e, err := c.nodes[li].Engine()
	require.NoError(t, err)
	var mu sync.Mutex
	var handled []string
	all := make(chan struct{})
	cons, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group: "g", ID: "m1", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		CommitInterval: time.Hour,
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, string(m.Body))
			if len(handled) == n {
				close(all)
			}
			return nil
		},
	})
	require.NoError(t, err)
	require.NoError(t, cons.Start(ctx))
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer did not handle the messages")
	}
	now, err := c.nodes[li].Engine()
	require.NoError(t, err)
	require.Same(t, e, now, "no election between the start of the consumer and the close")
	c.stop(li) // Node.Close: the engine's close closes the consumer
	c.start(li, false)
	c.sendBatch(t, "t", 0, [][]byte{[]byte("after")})
	e = c.waitEngine(nil)
	first := make(chan string, 1)
	again, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group: "g", ID: "m2", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			select {
			case first <- string(m.Body):
			default:
			}
			return nil
		},
	})
	require.NoError(t, err)
	require.NoError(t, again.Start(ctx))
	defer func() { require.NoError(t, again.Close()) }()
	select {
	case got := <-first:
		require.Equal(t, "after", got, "the new member starts past what the closed one handled")
	case <-time.After(30 * time.Second):
		t.Fatal("the new member got nothing")
	}
}

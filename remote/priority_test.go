package remote_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// TestPriority_OverRemoteWithScopedTokens: an admin creates a topic with
// priorities over the wire, a produce-only client sends to its lanes, and
// a consume-only client (which may not read routes) still gets the higher
// priority first: the lane counts come with its group assignment.
func TestPriority_OverRemoteWithScopedTokens(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{
		"admin-tok": remote.RightAll, "produce-tok": remote.RightProduce, "consume-tok": remote.RightConsume,
	}})
	admin := dial(t, s.addr, &remote.ClientOptions{Token: "admin-tok"})
	require.NoError(t, admin.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
	info, err := admin.Topic(ctx, "p")
	require.NoError(t, err)
	assert.Equal(t, 2, info.Priorities, "described over the wire")
	assert.Len(t, info.Queues, 2)

	p, err := equeue.NewProducer(dial(t, s.addr, &remote.ClientOptions{Token: "produce-tok"}), nil)
	require.NoError(t, err)
	defer p.Close()
	for i := range 10 {
		for _, pr := range []int{0, 1} {
			_, err := p.Send(ctx, &equeue.Message{Topic: "p", Priority: pr, Body: fmt.Appendf(nil, "%d-%d", pr, i)})
			require.NoError(t, err)
		}
	}
	var mu sync.Mutex
	var prios []int
	c, err := equeue.NewConsumer(dial(t, s.addr, &remote.ClientOptions{Token: "consume-tok"}), equeue.ConsumerOptions{
		Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}, Concurrency: 1, HeartbeatInterval: 200 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			prios = append(prios, m.Priority)
			mu.Unlock()
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	defer func() { assert.NoError(t, c.Close()) }()
	eventually(t, 30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(prios) == 20 }, "every message handled")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, prios)
}

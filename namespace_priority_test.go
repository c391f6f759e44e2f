package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// An assignment given through a namespace names the lane counts of its
// topics as the namespace does, so that a consumer on the view finds them
// (and the engine's qualified names stay inside the engine).
func TestNamespace_AssignmentPrioritiesUnqualified(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	ns, err := e.Namespace("tenant-a")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopicWith(ctx, "orders", equeue.TopicOptions{Queues: 2, Priorities: 2}))
	a, err := ns.JoinGroup(ctx, &equeue.JoinRequest{Group: "billing", Member: "m1", Subscriptions: []equeue.Subscription{{Topic: "orders"}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ns.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "billing", Member: "m1"}) })
	assert.Equal(t, map[string]int{"orders": 2}, a.Priorities)
	h, err := ns.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "billing", Member: "m1"})
	require.NoError(t, err)
	for topic := range h.Priorities {
		assert.NotContains(t, topic, equeue.NamespaceSeparator)
	}
}

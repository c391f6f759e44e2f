package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A member that joins a group of a view with other subscriptions is
// refused with an error that lists the group's subscriptions and its own:
// the text names the topics as the view does, never by the engine's
// "namespace:name", so a token scoped to the namespace does not learn the
// name the operator gave it.
func TestNamespace_SubscriptionMismatchNamesTheViewsTopics(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	a, err := e.Namespace("tenant-a")
	require.NoError(t, err)
	require.NoError(t, a.CreateTopic(ctx, "orders", 1))
	require.NoError(t, a.CreateTopic(ctx, "invoices", 1))
	_, err = a.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m1", Subscriptions: []equeue.Subscription{{Topic: "orders"}}})
	require.NoError(t, err)
	_, err = a.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m2", Subscriptions: []equeue.Subscription{{Topic: "invoices"}}})
	require.ErrorIs(t, err, equeue.ErrSubscriptionMismatch)
	assert.NotContains(t, err.Error(), "tenant-a", "the error names the engine's topics")
	assert.Contains(t, err.Error(), "orders")
	assert.Contains(t, err.Error(), "invoices")
}

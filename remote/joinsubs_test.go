package remote_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestJoinGroup_SubscriptionsAreBoundedOverRemote joins, over remote, a
// broker that creates unknown topics with more than
// equeue.MaxSubscriptions subscriptions: the join is ErrInvalidArgument on
// the client and creates no topic.
func TestJoinGroup_SubscriptionsAreBoundedOverRemote(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, &equeue.Options{AutoCreateTopics: true})
	subs := make([]equeue.Subscription, equeue.MaxSubscriptions+1)
	for i := range subs {
		subs[i] = equeue.Subscription{Topic: fmt.Sprintf("t%d", i)}
	}
	_, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: subs})
	require.ErrorIs(t, err, equeue.ErrInvalidArgument)
	topics, err := e.Topics(ctx)
	require.NoError(t, err)
	assert.Empty(t, topics, "the refused join created topics")
}

// TestNewConsumer_TooManySubscriptionsIsRefusedAtOnce: a consumer on a
// remote client with more subscriptions than a join takes
// (equeue.MaxSubscriptions, counting the group's retry topic that a
// clustering consumer that is not Orderly also subscribes) is refused by
// NewConsumer and NewPullConsumer with ErrInvalidOptions naming the bound,
// without a call to the server. Before, NewConsumer took it and Start
// failed in the join, and 1,024 subscriptions of such a consumer (1,025
// with its retry topic) failed there naming a count it was not given.
func TestNewConsumer_TooManySubscriptionsIsRefusedAtOnce(t *testing.T) {
	_, c := setup(t, nil)
	subs := func(n int) []equeue.Subscription {
		out := make([]equeue.Subscription, n)
		for i := range out {
			out[i] = equeue.Subscription{Topic: fmt.Sprintf("t%d", i)}
		}
		return out
	}
	handler := func(context.Context, *equeue.Message) error { return nil }
	for _, o := range []equeue.ConsumerOptions{
		{Group: "g", Subscriptions: subs(equeue.MaxSubscriptions + 1), Handler: handler, Orderly: true},
		{Group: "g", Subscriptions: subs(equeue.MaxSubscriptions + 1), Handler: handler, Model: equeue.Broadcasting},
		{Group: "g", Subscriptions: subs(equeue.MaxSubscriptions), Handler: handler}, // and the retry topic
	} {
		_, err := equeue.NewConsumer(c, o)
		require.ErrorIs(t, err, equeue.ErrInvalidOptions, "%d subscriptions, orderly %v, model %v", len(o.Subscriptions), o.Orderly, o.Model)
		assert.ErrorContains(t, err, "MaxSubscriptions")
		assert.ErrorContains(t, err, fmt.Sprint(equeue.MaxSubscriptions))
	}
	_, err := equeue.NewPullConsumer(c, equeue.PullConsumerOptions{Group: "g", Subscriptions: subs(equeue.MaxSubscriptions + 1)})
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)
	assert.ErrorContains(t, err, "MaxSubscriptions")

	// Within the bound, the consumers are made (their Start joins).
	for _, o := range []equeue.ConsumerOptions{
		{Group: "g", Subscriptions: subs(equeue.MaxSubscriptions), Handler: handler, Orderly: true},
		{Group: "g", Subscriptions: subs(equeue.MaxSubscriptions - 1), Handler: handler},
	} {
		cons, err := equeue.NewConsumer(c, o)
		require.NoError(t, err)
		require.NoError(t, cons.Close())
	}
	pc, err := equeue.NewPullConsumer(c, equeue.PullConsumerOptions{Group: "g", Subscriptions: subs(equeue.MaxSubscriptions)})
	require.NoError(t, err)
	require.NoError(t, pc.Close())
}

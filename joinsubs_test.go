package equeue_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestJoinGroup_SubscriptionsAreBounded joins with more than
// equeue.MaxSubscriptions subscriptions on an engine that creates unknown
// topics (Options.AutoCreateTopics): the join is ErrInvalidArgument and
// creates no topic and no group, where before one join created a topic per
// subscription, without end. A join within the bound creates its topics.
func TestJoinGroup_SubscriptionsAreBounded(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{AutoCreateTopics: true})
	subs := func(n int) []equeue.Subscription {
		out := make([]equeue.Subscription, n)
		for i := range out {
			out[i] = equeue.Subscription{Topic: fmt.Sprintf("t%d", i)}
		}
		return out
	}
	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: subs(equeue.MaxSubscriptions + 1)})
	require.ErrorIs(t, err, equeue.ErrInvalidArgument)
	assert.ErrorContains(t, err, "MaxSubscriptions")
	topics, err := e.Topics(ctx)
	require.NoError(t, err)
	assert.Empty(t, topics, "the refused join created topics")
	groups, err := e.Groups(ctx)
	require.NoError(t, err)
	assert.Empty(t, groups, "the refused join created a group")

	_, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: subs(3)})
	require.NoError(t, err)
}

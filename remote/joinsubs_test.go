package remote_test

import (
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

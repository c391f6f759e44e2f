package remote_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// On an engine that creates unknown topics (Options.AutoCreateTopics), a
// join creates the topics it subscribes to. A consume-only token must not
// create topics: its join of an unknown topic is answered ErrTopicNotFound,
// as on an engine without auto-creation, and creates nothing; a token that
// may produce still creates it.
func TestJoinGroup_ConsumeOnlyTokenCreatesNoTopic(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{AutoCreateTopics: true})
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{
		"c": remote.RightConsume, "pc": remote.RightProduce | remote.RightConsume}})
	c := dial(t, s.addr, &remote.ClientOptions{Token: "c"})
	_, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "fresh"}}})
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	ts, err := e.Topics(ctx)
	require.NoError(t, err)
	assert.Empty(t, ts, "a consume-only join created a topic")

	pc := dial(t, s.addr, &remote.ClientOptions{Token: "pc"})
	_, err = pc.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "fresh"}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}) })
	_, err = e.Topic(ctx, "fresh")
	assert.NoError(t, err, "a token that may produce still creates the topic by joining")
	// Once the topic exists, the consume-only token joins it.
	_, err = c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m2", Subscriptions: []equeue.Subscription{{Topic: "fresh"}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m2"}) })
}

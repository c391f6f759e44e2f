package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// readAheadRig is a client reading ahead for member m of group g, which
// pulled the first batch of topics t and u (one queue each, 40 messages):
// the client keeps read-ahead state for both.
func readAheadRig(t *testing.T) (*equeue.Engine, *remote.Client) {
	t.Helper()
	e := openEngine(t, nil)
	return e, readAheadRigOn(t, e)
}

// readAheadRigOn is readAheadRig on engine e.
func readAheadRigOn(t *testing.T, e *equeue.Engine) *remote.Client {
	t.Helper()
	ctx := ctxT(t)
	s := startServer(t, e, "", nil)
	c := dial(t, s.addr, &remote.ClientOptions{PullAhead: 16})
	msgs := make([]*equeue.Message, 40)
	for i := range msgs {
		msgs[i] = &equeue.Message{Body: []byte("x")}
	}
	for _, topic := range []string{"t", "u"} {
		require.NoError(t, e.CreateTopic(ctx, topic, 1))
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: topic, Messages: msgs})
		require.NoError(t, err)
	}
	a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m",
		Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: "u"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 2)
	for _, g := range a.Queues {
		res, err := c.Pull(ctx, &equeue.PullRequest{Topic: g.Topic, Queue: g.Queue, Group: "g", Member: "m", Epoch: g.Epoch, Max: 4, Wait: 5 * time.Second})
		require.NoError(t, err)
		require.Len(t, res.Messages, 4)
	}
	require.Equal(t, []string{"t", "u"}, remote.ReadAheadTopics(c))
	return c
}

// A client that deletes a topic drops what it read ahead of it at once,
// rather than keeping it until an idle sweep; other topics keep theirs.
func TestReadAhead_DeleteTopicDropsItsReadAhead(t *testing.T) {
	_, c := readAheadRig(t)
	require.NoError(t, c.DeleteTopic(ctxT(t), "t"))
	assert.Equal(t, []string{"u"}, remote.ReadAheadTopics(c))
}

// A client that learns from a pull that a topic was deleted elsewhere
// drops what it read ahead of it.
func TestReadAhead_PullOfDeletedTopicDropsItsReadAhead(t *testing.T) {
	e, c := readAheadRig(t)
	require.NoError(t, e.DeleteTopic(ctxT(t), "t"))
	// An offset past what was read ahead asks the broker.
	_, err := c.Pull(ctxT(t), &equeue.PullRequest{Topic: "t", Group: "g", Member: "m", Offset: 39, Max: 1, Wait: time.Second})
	require.ErrorIs(t, err, equeue.ErrTopicNotFound)
	assert.Equal(t, []string{"u"}, remote.ReadAheadTopics(c))
}

// A client whose delete of a topic may have been made (its context ended
// with the call at the broker: ErrIndeterminate) drops what it read ahead
// of it too, as it cannot tell the topic still holds those messages.
func TestReadAhead_DeleteTopicOfUnknownOutcomeDropsItsReadAhead(t *testing.T) {
	gs, e := gatedEngine(t)
	c := readAheadRigOn(t, e)
	err := heldCall(t, gs, func(ctx context.Context) error { return c.DeleteTopic(ctx, "t") })
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	assert.Equal(t, []string{"u"}, remote.ReadAheadTopics(c))
}

package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A message read with Engine.Pull (a browse, or a group's pull outside a
// Consumer) carries the lane it was stored in, as Message.Priority says,
// and so does the pull's result (PullResult.Priority), also of a stored
// pull, whose messages a transport carries undecoded.
func TestPriority_PulledMessageCarriesItsLane(t *testing.T) {
	ctx := context.Background()
	e, _ := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 3}))
	p := newProducer(t, e, nil)
	for prio := range 3 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "p", Body: []byte{byte('a' + prio)}, Priority: prio})
		require.NoError(t, err)
	}
	for lane := range 3 {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "p", Queue: lane, Max: 10})
		require.NoError(t, err)
		require.Len(t, res.Messages, 1, "lane %d", lane)
		assert.Equal(t, lane, res.Messages[0].Priority, "lane %d", lane)
		assert.Equal(t, lane, res.Priority, "lane %d: the result's", lane)
		stored, recs, err := e.PullStored(ctx, &equeue.PullRequest{Topic: "p", Queue: lane, Max: 10})
		require.NoError(t, err)
		require.Equal(t, 1, recs.Len(), "lane %d, stored", lane)
		assert.Equal(t, lane, stored.Priority, "lane %d: the stored pull's", lane)
	}
}

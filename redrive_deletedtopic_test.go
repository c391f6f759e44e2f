package equeue_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedrive_ToTopicGoesPastDeadLettersOfADeletedTopic: a group reads two
// topics and dead-letters a message of each; one topic is then deleted. A
// Redrive of All with ToTopic sends back the dead letter whose topic is
// still there, leaves the other unsent and unmarked, and says which it
// left, with an error matching ErrTopicNotFound. Before, the redrive
// stopped at the first dead letter of the deleted topic, so one such dead
// letter kept every later one from ever being redriven by All.
func TestRedrive_ToTopicGoesPastDeadLettersOfADeletedTopic(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "gone", 1))
	require.NoError(t, e.CreateTopic(ctx, "kept", 1))
	c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "c",
		Subscriptions: []equeue.Subscription{{Topic: "gone"}, {Topic: "kept"}},
		Handler: func(context.Context, *equeue.Message) error {
			return equeue.DeadLetter(errors.New("no"))
		}})
	p := newProducer(t, e, nil)
	// The deleted topic's dead letter first, so that it comes before the
	// other in the dead-letter topic.
	_, err := p.Send(ctx, &equeue.Message{Topic: "gone", Body: []byte("g1")})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool {
		dls, err := e.DeadLetters(ctx, "g", 0, 10)
		require.NoError(t, err)
		return len(dls) == 1
	}, "the first dead letter")
	_, err = p.Send(ctx, &equeue.Message{Topic: "kept", Body: []byte("k1")})
	require.NoError(t, err)
	var dls []equeue.DLQEntry
	eventually(t, 10*time.Second, func() bool {
		dls, err = e.DeadLetters(ctx, "g", 0, 10)
		require.NoError(t, err)
		return len(dls) == 2
	}, "two dead letters")
	require.NoError(t, c.Close())
	require.Equal(t, "gone", dls[0].Message.Topic)
	require.NoError(t, e.DeleteTopic(ctx, "gone"))

	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
	require.ErrorIs(t, err, equeue.ErrTopicNotFound)
	assert.Contains(t, err.Error(), "gone", "the error names the topic that is gone")
	assert.Equal(t, 1, n, "the dead letter of the topic still there is sent back")
	kept, err := e.Topic(ctx, "kept")
	require.NoError(t, err)
	assert.Equal(t, int64(2), kept.Queues[0].MaxOffset, "k1 is in kept again")
	after, err := e.DeadLetters(ctx, "g", 0, 10)
	require.NoError(t, err)
	require.Len(t, after, 2)
	assert.False(t, after[0].Redriven, "the dead letter of the deleted topic is not marked redriven")
	assert.True(t, after[1].Redriven)

	// Made again, the topic takes its dead letter back.
	require.NoError(t, e.CreateTopic(ctx, "gone", 1))
	n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// TestRedrive_ToRetryTopicLeavesDeadLettersOfADeletedTopic: a redrive into
// the group's retry topic of a dead letter whose topic was deleted would
// store a copy that the group's pull skips (its origin topic is gone) and
// mark the dead letter redriven: the message would be lost without a
// word. The redrive leaves such a dead letter unsent and unmarked, and
// says so with an error matching ErrTopicNotFound, as ToTopic does; made
// again, the topic takes it back on the next redrive, whose copy is one of
// the new topic (it carries the new topic's ID), so the pull delivers it.
func TestRedrive_ToRetryTopicLeavesDeadLettersOfADeletedTopic(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	f := newDLQFixture(t, e)
	f.fail(t, "x", 1)
	require.NoError(t, e.DeleteTopic(ctx, "t"))

	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.ErrorIs(t, err, equeue.ErrTopicNotFound)
	assert.Contains(t, err.Error(), `"t"`, "the error names the topic")
	assert.Zero(t, n)
	dls, err := e.DeadLetters(ctx, "g", 0, 10)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	assert.False(t, dls[0].Redriven, "the dead letter is not marked redriven")
	rt, err := e.Topic(ctx, equeue.RetryTopic("g")) // made when the group joined
	require.NoError(t, err)
	assert.Zero(t, rt.Queues[0].MaxOffset, "no copy was stored")

	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the topic made again takes it back")
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: equeue.RetryTopic("g")})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1, "the copy is delivered")
	assert.Equal(t, strconv.FormatUint(uint64(info.ID), 10), res.Messages[0].SysProperty(equeue.SysOriginTopicID))
}

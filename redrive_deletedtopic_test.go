package equeue_test

import (
	"context"
	"errors"
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

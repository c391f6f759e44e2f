package watermill_test

import (
	"context"
	"testing"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	eqwm "github.com/equeue-go/equeue/watermill"
)

// TestPublishMakesADeletedTopicAgain: a topic deleted while a Publisher
// lives is made again on its next Publish, as on first use; before, the
// Publisher remembered it as made and every Publish failed with
// ErrTopicNotFound until it was closed.
func TestPublishMakesADeletedTopicAgain(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e})
	require.NoError(t, pub.Publish("orders", message.NewMessage(wm.NewUUID(), []byte("first"))))
	require.NoError(t, e.DeleteTopic(context.Background(), "orders"))
	require.NoError(t, pub.Publish("orders", message.NewMessage(wm.NewUUID(), []byte("second"))))
	assert.Equal(t, int64(1), stored(t, e, "orders"), "the topic made again holds the second message")
}

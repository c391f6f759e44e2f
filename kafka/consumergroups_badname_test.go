package kafka_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/kafka"
)

// A member of a consumer group may subscribe to a name Kafka allows and
// the engine cannot hold (longer than its 127 characters; Kafka allows
// 249): no topic has it, so it is left out like a topic not created yet,
// and the group's members get the partitions of the topics that exist.
// The engine's lookup answers such a name ErrInvalidName, not
// ErrTopicNotFound; taken as a failure, it failed the heartbeats of every
// member of the group, whose subscriptions are read together.
func TestConsumerGroup_SubscriptionToANameNoTopicCanHaveIsLeftOut(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	addr := serve(t, e, &kafka.Options{ConsumerHeartbeatInterval: 50 * time.Millisecond, ConsumerSessionTimeout: time.Minute})
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")

	long := strings.Repeat("x", 200)
	a := &cgMember{t: t, b: b, id: "a"}
	r := a.beat(ctx, tid, []string{"t", long}, false)
	require.Equal(t, int16(0), r.ErrorCode, "the heartbeat of the member subscribing to it")
	assert.Equal(t, []int32{0, 1}, a.owned, "it gets the partitions of the topic that exists")

	bm := &cgMember{t: t, b: b, id: "b"}
	require.Equal(t, int16(0), bm.beat(ctx, tid, []string{"t"}, false).ErrorCode, "another member's heartbeat")
}

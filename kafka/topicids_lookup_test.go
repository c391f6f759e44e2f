package kafka_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// listingBroker is an engine that counts the listings of its topics.
type listingBroker struct {
	*equeue.Engine
	listings atomic.Int64
}

// Topics counts the listing and lists the engine's topics.
func (l *listingBroker) Topics(ctx context.Context) ([]equeue.TopicInfo, error) {
	l.listings.Add(1)
	return l.Engine.Topics(ctx)
}

// askByID sends one Metadata v12 request of the topic with the given ID
// and returns the answer's one topic.
func askByID(ctx context.Context, t *testing.T, b *kgo.Broker, id [16]byte) kmsg.MetadataResponseTopic {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	mt := kmsg.NewMetadataRequestTopic()
	mt.TopicID = id
	md.Topics = append(md.Topics, mt)
	resp, err := b.Request(ctx, md)
	require.NoError(t, err)
	require.Len(t, resp.(*kmsg.MetadataResponse).Topics, 1)
	return resp.(*kmsg.MetadataResponse).Topics[0]
}

// TestTopicIDs_UnknownIDListsTopicsOnce: requests that name a topic by an
// ID no topic has (a client looping on a stale ID) do not each list every
// topic: while no topic was created or deleted the listener knows the ID
// is no topic's. A topic created after such a miss is found by its ID at
// once, and one deleted is no longer. Before, each such request listed
// all the topics.
func TestTopicIDs_UnknownIDListsTopicsOnce(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	lb := &listingBroker{Engine: e}
	b := kclient(t, serve(t, lb, nil)).SeedBrokers()[0]
	unknown := [16]byte{7, 7, 7}

	const n = 20
	missAll := func() {
		t.Helper()
		before := lb.listings.Load()
		for range n {
			rt := askByID(ctx, t, b, unknown)
			require.Equal(t, kerr.UnknownTopicID.Code, rt.ErrorCode)
		}
		assert.LessOrEqual(t, lb.listings.Load()-before, int64(1), "%d misses listed the topics %d times", n, lb.listings.Load()-before)
	}
	missAll()

	require.NoError(t, e.CreateTopic(ctx, "u", 3))
	uid := topicIDOf(ctx, t, b, "u")
	rt := askByID(ctx, t, b, uid)
	assert.Equal(t, int16(0), rt.ErrorCode, "a topic created after a miss is found at once")
	assert.Equal(t, kmsg.StringPtr("u"), rt.Topic)
	assert.Len(t, rt.Partitions, 3)
	missAll()

	require.NoError(t, e.DeleteTopic(ctx, "u"))
	rt = askByID(ctx, t, b, uid)
	assert.Equal(t, kerr.UnknownTopicID.Code, rt.ErrorCode, "a topic deleted is no longer found")
	missAll()
}

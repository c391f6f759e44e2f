package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// metadataAt is a Metadata request that a franz-go broker
// (kgo.Broker.Request) sends at version v at most.
type metadataAt struct {
	*kmsg.MetadataRequest
	v int16
}

// MaxVersion caps the version sent at v.
func (m metadataAt) MaxVersion() int16 { return m.v }

// TestMetadata_TopicIDsBeforeV12: Metadata v10 and v11 carry a topic ID
// field, but Kafka resolves topics by ID from v12 only: a v10 or v11
// request that gives a topic an ID, or no name, is an INVALID_REQUEST, and
// Kafka answers every topic of it so (the name asked for, "" for none, the
// ID asked with, no partitions), creating none. A v10 or v11 request by
// names alone is served. Before, the listener took an ID-only topic for
// one named "" (INVALID_TOPIC_EXCEPTION), served a topic given both a name
// and an ID by its name, and served the request's other topics.
func TestMetadata_TopicIDsBeforeV12(t *testing.T) {
	e := openEngine(t, &equeue.Options{AutoCreateTopics: true})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := kclient(t, serve(t, e, nil)).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")

	ask := func(v int16, topics ...kmsg.MetadataRequestTopic) *kmsg.MetadataResponse {
		t.Helper()
		md := kmsg.NewPtrMetadataRequest()
		md.Topics, md.AllowAutoTopicCreation = topics, true
		resp, err := b.Request(ctx, metadataAt{md, v})
		require.NoError(t, err)
		require.Equal(t, v, md.GetVersion(), "sent at v%d", v)
		return resp.(*kmsg.MetadataResponse)
	}
	topic := func(name *string, id [16]byte) kmsg.MetadataRequestTopic {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic, mt.TopicID = name, id
		return mt
	}

	for _, v := range []int16{10, 11} {
		for _, bad := range []kmsg.MetadataRequestTopic{
			topic(nil, tid),                  // by ID only
			topic(kmsg.StringPtr("t"), tid),  // a name and an ID
			topic(nil, [16]byte{}),           // neither
			topic(nil, [16]byte{9, 9, 9, 9}), // an ID no topic has
		} {
			resp := ask(v, topic(kmsg.StringPtr("t"), [16]byte{}), bad, topic(kmsg.StringPtr("fresh"), [16]byte{}))
			require.Len(t, resp.Topics, 3, "v%d", v)
			for i, want := range []string{"t", "", "fresh"} {
				rt := resp.Topics[i]
				assert.Equal(t, kerr.InvalidRequest.Code, rt.ErrorCode, "v%d topic %d", v, i)
				require.NotNil(t, rt.Topic, "v%d topic %d", v, i)
				if i == 1 && bad.Topic != nil {
					want = *bad.Topic
				}
				assert.Equal(t, want, *rt.Topic, "v%d topic %d", v, i)
				assert.Empty(t, rt.Partitions, "v%d topic %d", v, i)
			}
			assert.Equal(t, bad.TopicID, resp.Topics[1].TopicID, "v%d: the ID asked with", v)
			_, err := e.Topic(ctx, "fresh")
			require.ErrorIs(t, err, equeue.ErrTopicNotFound, "v%d: no topic created", v)
		}

		resp := ask(v, topic(kmsg.StringPtr("t"), [16]byte{}))
		require.Len(t, resp.Topics, 1)
		assert.Equal(t, int16(0), resp.Topics[0].ErrorCode, "v%d by name", v)
		assert.Equal(t, tid, resp.Topics[0].TopicID)
		assert.Len(t, resp.Topics[0].Partitions, 2)
	}
}

package kafka_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// storingNode is a fakeNode whose store holds its engine's topics, as a
// follower's holds the leader's (cluster.Node.StoredTopics).
type storingNode struct{ *fakeNode }

// StoredTopics lists the engine's topics.
func (s storingNode) StoredTopics() ([]equeue.TopicInfo, error) {
	return s.Engine.Topics(context.Background())
}

// TestCluster_FollowerMetadataByID: a follower's listener answers a
// Metadata v12 request of many topics by ID from the topics its store
// holds, each under its name and led by the leader, in the order asked;
// an ID its store lacks gets LEADER_NOT_AVAILABLE, so clients ask the
// leader. The follower indexes its topics by ID once for the request
// (it looked every topic over for each ID before).
func TestCluster_FollowerMetadataByID(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	names := []string{"a", "b", "c", "d", "e"}
	for i, n := range names {
		require.NoError(t, e.CreateTopic(ctx, n, i+1))
	}
	node := storingNode{&fakeNode{Engine: e, id: "n2"}}
	node.setLeader("n1", "10.0.0.1:19092")
	b := kclient(t, serve(t, node, nil)).SeedBrokers()[0]
	leader := kafka.BrokerID("n1")

	ids := map[string][16]byte{}
	for _, n := range names {
		ids[n] = topicIDOf(ctx, t, b, n)
		require.NotEqual(t, [16]byte{}, ids[n], n)
	}
	unknown := [16]byte{5, 5, 5}
	asked := []string{"e", "a", "?", "c", "b", "d"}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	for _, n := range asked {
		mt := kmsg.NewMetadataRequestTopic()
		mt.TopicID = unknown
		if n != "?" {
			mt.TopicID = ids[n]
		}
		md.Topics = append(md.Topics, mt)
	}
	resp, err := b.Request(ctx, md)
	require.NoError(t, err)
	got := resp.(*kmsg.MetadataResponse).Topics
	require.Len(t, got, len(asked))
	for i, n := range asked {
		rt := got[i]
		if n == "?" {
			assert.Equal(t, kerr.LeaderNotAvailable.Code, rt.ErrorCode)
			assert.Equal(t, unknown, rt.TopicID)
			assert.Empty(t, rt.Partitions)
			continue
		}
		assert.Equal(t, int16(0), rt.ErrorCode, n)
		assert.Equal(t, kmsg.StringPtr(n), rt.Topic)
		assert.Equal(t, ids[n], rt.TopicID, n)
		require.Len(t, rt.Partitions, int(n[0]-'a')+1, n)
		for _, p := range rt.Partitions {
			assert.Equal(t, leader, p.Leader, n)
		}
	}
}

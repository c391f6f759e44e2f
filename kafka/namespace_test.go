package kafka_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// A listener over the whole engine hides namespaced topics ("ns:name" is no
// legal Kafka name); a listener over a namespace serves that namespace's
// topics and groups by their plain names, and nothing of another.
func TestKafka_NamespaceListener(t *testing.T) {
	ctx := testCtx(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "root-topic", 1))
	a, err := e.Namespace("a")
	require.NoError(t, err)
	b, err := e.Namespace("b")
	require.NoError(t, err)
	require.NoError(t, a.CreateTopic(ctx, "orders", 1))
	require.NoError(t, b.CreateTopic(ctx, "orders", 1))

	topicsOf := func(addr string) []string {
		t.Helper()
		md, err := kadmin(t, addr).Metadata(ctx)
		require.NoError(t, err)
		return md.Topics.Names()
	}
	assert.ElementsMatch(t, []string{"root-topic"}, topicsOf(serve(t, e, nil)), "the whole engine's listener hides namespaced topics")
	addrA := serve(t, a, nil)
	assert.ElementsMatch(t, []string{"orders"}, topicsOf(addrA))

	w := kclient(t, addrA, kgo.DefaultProduceTopic("orders"))
	require.NoError(t, w.ProduceSync(ctx, &kgo.Record{Value: []byte("in a")}).FirstErr())
	res, err := a.Pull(ctx, &equeue.PullRequest{Topic: "orders", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "in a", string(res.Messages[0].Body))
	res, err = b.Pull(ctx, &equeue.PullRequest{Topic: "orders", Max: 10})
	require.NoError(t, err)
	assert.Empty(t, res.Messages, "namespace b's topic of the same name is untouched")

	// A Kafka group of the namespace commits where the namespace keeps it.
	r := kclient(t, addrA, kgo.ConsumerGroup("kg"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	recs := pollN(ctx, t, r, 1)
	require.NoError(t, r.CommitRecords(context.Background(), recs...))
	offs, err := a.GroupOffsets(ctx, "kg")
	require.NoError(t, err)
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "orders", Queue: 0}: 1}, offs)
	raw, err := e.GroupOffsets(ctx, "a"+equeue.NamespaceSeparator+"kg")
	require.NoError(t, err)
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "a" + equeue.NamespaceSeparator + "orders", Queue: 0}: 1}, raw)
}

// A listener over a namespace refuses a group name holding the separator
// as the engine refuses it for the namespace: the join with
// INVALID_GROUP_ID (else its members would consume with every commit
// refused), and so a commit and an offset fetch of that name, as they
// are for any name the engine cannot store.
func TestKafka_NamespaceListenerRefusesAQualifiedGroupName(t *testing.T) {
	ctx := testCtx(t)
	e := openEngine(t, nil)
	a, err := e.Namespace("a")
	require.NoError(t, err)
	require.NoError(t, a.CreateTopic(ctx, "orders", 1))
	b := kclient(t, serve(t, a, nil)).SeedBrokers()[0]
	name := "b" + equeue.NamespaceSeparator + "kg"

	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = name, 30000, 30000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	resp, err := b.Request(ctx, jg)
	require.NoError(t, err)
	assert.Equal(t, kerr.InvalidGroupID.Code, resp.(*kmsg.JoinGroupResponse).ErrorCode, "join")

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = name, -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "orders"
	oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
	oc.Topics = append(oc.Topics, oct)
	resp, err = b.Request(ctx, namedCommit{oc})
	require.NoError(t, err)
	assert.Equal(t, kerr.InvalidGroupID.Code, resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, "commit")

	of := kmsg.NewPtrOffsetFetchRequest()
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: name}}
	resp, err = b.Request(ctx, of)
	require.NoError(t, err)
	fetched := resp.(*kmsg.OffsetFetchResponse)
	require.Len(t, fetched.Groups, 1)
	assert.Equal(t, kerr.InvalidGroupID.Code, fetched.Groups[0].ErrorCode, "fetch")

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = name, "m1", 0, 30000
	hb.SubscribedTopicNames = []string{"orders"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err = b.Request(ctx, hb)
	require.NoError(t, err)
	assert.Equal(t, kerr.InvalidGroupID.Code, resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, "KIP-848 heartbeat")

	lresp, err := b.Request(ctx, kmsg.NewPtrListGroupsRequest())
	require.NoError(t, err)
	assert.Empty(t, lresp.(*kmsg.ListGroupsResponse).Groups, "no group is left behind")
}

package kafka_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// TestGroups_CommitStoreFailureIsRetriedByClients: an offset commit the
// store failed is answered NOT_COORDINATOR, as Kafka's group coordinator
// answers a failure of its offsets log, so clients look the coordinator up
// again and retry it. KAFKA_STORAGE_ERROR, a partition error, is not among
// the errors group clients retry: the Java consumer fails the commit with
// "Unexpected error in commit", and franz-go reports it.
func TestGroups_CommitStoreFailureIsRetriedByClients(t *testing.T) {
	fs := faultstore.New(keepOpen{store.NewMemory()})
	e := openEngine(t, &equeue.Options{Store: fs})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 3 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	addr := serve(t, e, nil)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
	commit.Topics = append(commit.Topics, ct)
	fs.FailWrites(1)
	resp, err := kclient(t, addr).SeedBrokers()[0].Request(ctx, namedCommit{commit})
	require.NoError(t, err)
	assert.Equal(t, kerr.NotCoordinator.Code, resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)

	// franz-go retries such a commit, and it is stored.
	fs.FailWrites(1)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 2, LeaderEpoch: -1})
	adm := kadmin(t, addr)
	committed, err := adm.CommitOffsets(ctx, "g", offs)
	require.NoError(t, err)
	require.NoError(t, committed.Error())
	got, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 2}, got)
}

// notLeading is an engine whose node stops leading while the listener
// serves a group: its calls fail with equeue.ErrNotLeader, as a cluster
// node's do when it lost its lease after the listener checked it led (the
// listener of a cluster.Node). offsets fails the group offsets calls,
// topics the topic reads.
type notLeading struct {
	*equeue.Engine
	offsets, topics atomic.Bool
}

func (n *notLeading) CommitGroupOffsets(ctx context.Context, group string, offsets map[equeue.QueueRef]int64) error {
	if n.offsets.Load() {
		return fmt.Errorf("commit offsets: %w", equeue.ErrNotLeader)
	}
	return n.Engine.CommitGroupOffsets(ctx, group, offsets)
}

func (n *notLeading) GroupOffsets(ctx context.Context, group string) (map[equeue.QueueRef]int64, error) {
	if n.offsets.Load() {
		return nil, fmt.Errorf("group offsets: %w", equeue.ErrNotLeader)
	}
	return n.Engine.GroupOffsets(ctx, group)
}

func (n *notLeading) Topic(ctx context.Context, name string) (equeue.TopicInfo, error) {
	if n.topics.Load() {
		return equeue.TopicInfo{}, fmt.Errorf("topic: %w", equeue.ErrNotLeader)
	}
	return n.Engine.Topic(ctx, name)
}

// TestGroups_NotLeadingAnswersNotCoordinator: a group call that finds the
// node no longer leading is answered NOT_COORDINATOR (OffsetCommit,
// OffsetFetch, ConsumerGroupHeartbeat), on which group clients look the
// coordinator up again, as Kafka's coordinator answers when it no longer
// leads its offsets partition; not NOT_LEADER_OR_FOLLOWER, a partition
// error that the Java consumer takes for an unexpected one (its commit
// fails, its poll throws on an offset fetch) and on which franz-go's
// KIP-848 member gives up its partitions and joins again.
func TestGroups_NotLeadingAnswersNotCoordinator(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	b := &notLeading{Engine: e}
	seed := kclient(t, serve(t, b, nil), kgo.RequestRetries(0)).SeedBrokers()[0]
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "cg", "m1", 0, 30000
	hb.SubscribedTopicNames = []string{"t"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	joined, err := seed.Request(ctx, hb)
	require.NoError(t, err)
	require.Equal(t, int16(0), joined.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
	commit.Topics = append(commit.Topics, ct)
	commitCode := func() int16 {
		resp, err := seed.Request(ctx, namedCommit{commit})
		require.NoError(t, err)
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	b.offsets.Store(true)
	assert.Equal(t, kerr.NotCoordinator.Code, commitCode(), "OffsetCommit, lost while storing")

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group = "g"
	fetch.Groups = append(fetch.Groups, fg)
	fresp, err := seed.Request(ctx, fetch)
	require.NoError(t, err)
	require.Len(t, fresp.(*kmsg.OffsetFetchResponse).Groups, 1)
	assert.Equal(t, kerr.NotCoordinator.Code, fresp.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode, "OffsetFetch")

	b.offsets.Store(false)
	b.topics.Store(true)
	assert.Equal(t, kerr.NotCoordinator.Code, commitCode(), "OffsetCommit, lost before reading the topic")
	hb.MemberEpoch = joined.(*kmsg.ConsumerGroupHeartbeatResponse).MemberEpoch
	hresp, err := seed.Request(ctx, hb)
	require.NoError(t, err)
	assert.Equal(t, kerr.NotCoordinator.Code, hresp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, "ConsumerGroupHeartbeat")

	b.topics.Store(false)
	assert.Equal(t, int16(0), commitCode(), "leading again")
}

// TestGroups_OffsetFetchV1ErrorIsPerPartition: OffsetFetch v0 and v1 have
// no group error code, so a group error is given on every partition asked
// for, as Kafka does. Before, the v1 answer had no partitions at all, and
// segmentio/kafka-go (whose groups fetch offsets with v1) took that for
// "nothing committed": it started the partitions from its StartOffset,
// the first offset by default, consuming again what the group had
// committed past.
func TestGroups_OffsetFetchV1ErrorIsPerPartition(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := &notLeading{Engine: e}
	v1 := kversion.Stable()
	v1.SetMaxKeyVersion(9, 1) // OffsetFetch
	seed := kclient(t, serve(t, b, nil), kgo.MaxVersions(v1), kgo.RequestRetries(0)).SeedBrokers()[0]
	b.offsets.Store(true)
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "g"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "t", []int32{0, 1}
	fetch.Topics = append(fetch.Topics, ft)
	resp, err := seed.Request(ctx, fetch)
	require.NoError(t, err)
	r := resp.(*kmsg.OffsetFetchResponse)
	require.Equal(t, int16(1), r.GetVersion())
	require.Len(t, r.Topics, 1)
	assert.Equal(t, "t", r.Topics[0].Topic)
	require.Len(t, r.Topics[0].Partitions, 2)
	for i, p := range r.Topics[0].Partitions {
		assert.Equal(t, int32(i), p.Partition)
		assert.Equal(t, kerr.NotCoordinator.Code, p.ErrorCode)
		assert.Equal(t, int64(-1), p.Offset)
	}
}

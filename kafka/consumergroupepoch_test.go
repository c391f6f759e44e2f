package kafka_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestConsumerGroup_WaitingHeartbeatKeepsTheEpochTheMemberWasTold: a
// KIP-848 heartbeat that moves its member to a new epoch with a partition
// whose previous holder's commit is in flight waits for that commit; until
// it answers, the member stays at the epoch it was last told, so that its
// next heartbeat (the client retrying on another connection after its
// request timed out) is not fenced. Before, the member was moved to the
// new epoch before the wait: ConsumerGroupDescribe showed an epoch the
// member was never given, and a keepalive with the epoch it had got
// FENCED_MEMBER_EPOCH, making it rejoin and lose its assignment.
func TestConsumerGroup_WaitingHeartbeatKeepsTheEpochTheMemberWasTold(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	hb := &heldCommits{Broker: e}
	s, addr := serveServer(t, hb)
	b := kclient(t, addr).SeedBrokers()[0]
	slow := func(opts ...kgo.Opt) *kgo.Broker {
		return kclient(t, addr, append([]kgo.Opt{kgo.RequestTimeoutOverhead(time.Minute)}, opts...)...).SeedBrokers()[0]
	}
	tid := topicIDOf(ctx, t, b, "t")
	describeMember := func(id string) kmsg.ConsumerGroupDescribeResponseGroupMember {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"g"}
		resp, err := b.Request(ctx, req)
		require.NoError(t, err)
		for _, m := range resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].Members {
			if m.MemberID == id {
				return m
			}
		}
		t.Fatalf("member %s not described", id)
		return kmsg.ConsumerGroupDescribeResponseGroupMember{}
	}

	// a holds partition 0, c partition 1.
	a := &cgMember{t: t, b: b, id: "member-a"}
	require.Equal(t, int16(0), a.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode)
	c := &cgMember{t: t, b: b, id: "member-c"}
	require.Equal(t, int16(0), c.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, false).ErrorCode)
	require.Equal(t, []int32{0}, a.owned)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode)
	require.Equal(t, int16(0), c.beat(ctx, tid, nil, true).ErrorCode)
	require.Equal(t, []int32{1}, c.owned)
	told := c.epoch

	// a commits partition 0, held before its store write, and leaves.
	entered, release := hb.arm()
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	aCommit := make(chan int16, 1)
	go func() { aCommit <- commitOne(ctx, t, slow(), a.epoch, a.id, 1) }()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("a's commit never reached the store")
	}
	require.Equal(t, int16(0), (&cgMember{t: t, b: b, id: a.id, epoch: -1}).beat(ctx, tid, nil, false).ErrorCode)

	// c's keepalive would give it partition 0 at a new epoch: it waits
	// for a's commit.
	first := &cgMember{t: t, b: slow(), id: c.id, epoch: told}
	firstDone := make(chan int16, 1)
	go func() { firstDone <- first.beat(ctx, tid, nil, false).ErrorCode }()
	require.Eventually(t, kafka.CommitsAwaited(s, "g"), 30*time.Second, time.Millisecond)
	assert.Equal(t, told, describeMember(c.id).MemberEpoch, "the member is at the epoch it was told while its heartbeat waits")

	// The client sends again, on another connection, with the epoch it
	// has: accepted, it waits for the commit too (it is seen once the
	// coordinator took its client ID).
	second := &cgMember{t: t, b: slow(kgo.ClientID("second")), id: c.id, epoch: told}
	secondDone := make(chan int16, 1)
	go func() { secondDone <- second.beat(ctx, tid, nil, false).ErrorCode }()
	code := int16(-1)
	require.Eventually(t, func() bool {
		select {
		case code = <-secondDone:
			return true
		default:
			return describeMember(c.id).ClientID == "second"
		}
	}, 30*time.Second, time.Millisecond)
	require.Equal(t, int16(-1), code, "the second heartbeat was answered while the commit was held (110: FENCED_MEMBER_EPOCH)")

	letGo()
	require.Equal(t, int16(0), <-aCommit)
	require.Equal(t, int16(0), <-firstDone)
	require.Equal(t, int16(0), <-secondDone)
	assert.Greater(t, first.epoch, told, "the answer moves c to the new epoch")
	assert.Equal(t, first.epoch, second.epoch)
	d := describeMember(c.id)
	assert.Equal(t, first.epoch, d.MemberEpoch)
	require.Len(t, d.Assignment.TopicPartitions, 1)
	assert.Equal(t, []int32{0, 1}, d.Assignment.TopicPartitions[0].Partitions, "with the partition a released")
	offs, err := e.GroupOffsets(context.Background(), "g")
	require.NoError(t, err)
	assert.Equal(t, int64(1), offs[equeue.QueueRef{Topic: "t", Queue: 0}])
}

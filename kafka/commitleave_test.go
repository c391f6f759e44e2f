package kafka_test

import (
	"fmt"
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

// TestGroups_LeaveThatWaitedStartsNoExtraRebalance: a LeaveGroup that
// waits for a commit in flight before the group's generation ends, while
// a new member's join waits for the same commit, does not start another
// join phase once the join began the next generation meanwhile: the new
// member syncs into it. Before, the leave, woken with the join, began a
// join phase whenever the join had made the generation first, so the new
// member's SyncGroup got REBALANCE_IN_PROGRESS and it had to join again.
// The two wake in either order, so the scenario is run several times.
func TestGroups_LeaveThatWaitedStartsNoExtraRebalance(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	hb := &heldCommits{Broker: e}
	s, addr := serveServer(t, hb)
	b := kclient(t, addr).SeedBrokers()[0]
	slow := func() *kgo.Broker {
		return kclient(t, addr, kgo.RequestTimeoutOverhead(time.Minute)).SeedBrokers()[0]
	}

	for round := range 8 {
		group := fmt.Sprintf("g%d", round)
		ja := joinAlone(ctx, t, b, group)
		awaited := kafka.CommitsAwaited(s, group)

		// a's commit is held before its store write; a leaves, and the
		// group's end waits for the commit.
		entered, release := hb.arm()
		var once sync.Once
		letGo := func() { once.Do(func() { close(release) }) }
		t.Cleanup(letGo)
		aCommit := make(chan int16, 1)
		go func() {
			oc := kmsg.NewPtrOffsetCommitRequest()
			oc.Group, oc.Generation, oc.MemberID = group, ja.Generation, ja.MemberID
			oct := kmsg.NewOffsetCommitRequestTopic()
			oct.Topic = "t"
			oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
			oc.Topics = append(oc.Topics, oct)
			resp, err := slow().Request(ctx, namedCommit{oc})
			if !assert.NoError(t, err) {
				aCommit <- -1
				return
			}
			aCommit <- resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		}()
		select {
		case <-entered:
		case <-ctx.Done():
			t.Fatal("a's commit never reached the store")
		}
		left := make(chan error, 1)
		go func() {
			lg := kmsg.NewPtrLeaveGroupRequest()
			lg.Group = group
			lg.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ja.MemberID}}
			_, err := slow().Request(ctx, lg)
			left <- err
		}()
		require.Eventually(t, awaited, 30*time.Second, time.Millisecond)

		// c joins meanwhile: its generation waits for the commit too.
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.Group, jg.ProtocolType = group, "consumer"
		jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = 30000, 30000
		jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		resp, err := b.Request(ctx, jg)
		require.NoError(t, err)
		require.Equal(t, int16(79), resp.(*kmsg.JoinGroupResponse).ErrorCode, "MEMBER_ID_REQUIRED")
		jg.MemberID = resp.(*kmsg.JoinGroupResponse).MemberID
		cJoin := make(chan *kmsg.JoinGroupResponse, 1)
		go func() {
			resp, err := slow().Request(ctx, jg)
			if !assert.NoError(t, err) {
				cJoin <- kmsg.NewPtrJoinGroupResponse()
				return
			}
			cJoin <- resp.(*kmsg.JoinGroupResponse)
		}()
		require.Eventually(t, func() bool {
			dg := kmsg.NewPtrDescribeGroupsRequest()
			dg.Groups = []string{group}
			resp, err := b.Request(ctx, dg)
			require.NoError(t, err)
			d := resp.(*kmsg.DescribeGroupsResponse).Groups[0]
			return d.State == "PreparingRebalance" && len(d.Members) == 1 && d.Members[0].MemberID == jg.MemberID
		}, 30*time.Second, time.Millisecond, "c's join waits for the commit")

		letGo()
		require.Equal(t, int16(0), <-aCommit)
		require.NoError(t, <-left)
		jc := <-cJoin
		require.Equal(t, int16(0), jc.ErrorCode)
		require.Equal(t, ja.Generation+1, jc.Generation)
		sg := kmsg.NewPtrSyncGroupRequest()
		sg.Group, sg.Generation, sg.MemberID = group, jc.Generation, jc.MemberID
		sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jc.MemberID, MemberAssignment: []byte("p0")}}
		sresp, err := b.Request(ctx, sg)
		require.NoError(t, err)
		require.Equal(t, int16(0), sresp.(*kmsg.SyncGroupResponse).ErrorCode, "round %d: c syncs into the generation it joined", round)
	}
}

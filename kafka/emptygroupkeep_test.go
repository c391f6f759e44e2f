package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestGroups_EmptyGroupIsKeptFromItsLastEmptying: an empty group (of
// either protocol) that a member joins and leaves between two rounds of
// the coordinator's tick is kept emptyGroupKeep from then, not from when
// a round first found it empty before. Before, only a round that found
// members reset that time, so such a group was forgotten at the next
// round after emptyGroupKeep from its earlier emptying, however recently
// its last member left.
func TestGroups_EmptyGroupIsKeptFromItsLastEmptying(t *testing.T) {
	kafka.SetEmptyGroupKeep(t, time.Minute)
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	s, addr := serveServer(t, e)
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")

	t.Run("KIP-848", func(t *testing.T) {
		joinAndLeave := func(id string) {
			m := &cgMember{t: t, b: b, group: "cg", id: id}
			require.Equal(t, int16(0), m.beat(ctx, tid, []string{"t"}, false).ErrorCode)
			require.Equal(t, int16(0), (&cgMember{t: t, b: b, group: "cg", id: id, epoch: -1}).beat(ctx, tid, nil, false).ErrorCode)
		}
		joinAndLeave("member-a")
		emptied := time.Now()
		kafka.Tick(s, emptied) // finds it empty

		joinAndLeave("member-b") // between two rounds
		kafka.Tick(s, emptied.Add(2*time.Minute))
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"cg"}
		resp, err := b.Request(ctx, req)
		require.NoError(t, err)
		d := resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
		assert.Equal(t, int16(0), d.ErrorCode, "kept: its last member left just now")
		assert.Equal(t, "Empty", d.State)
	})

	t.Run("classic", func(t *testing.T) {
		joinAndLeave := func() {
			j := joinAlone(ctx, t, b, "classic")
			lg := kmsg.NewPtrLeaveGroupRequest()
			lg.Group = "classic"
			lg.Members = []kmsg.LeaveGroupRequestMember{{MemberID: j.MemberID}}
			resp, err := b.Request(ctx, lg)
			require.NoError(t, err)
			require.Equal(t, int16(0), resp.(*kmsg.LeaveGroupResponse).Members[0].ErrorCode)
		}
		joinAndLeave()
		emptied := time.Now()
		kafka.Tick(s, emptied)

		joinAndLeave()
		kafka.Tick(s, emptied.Add(2*time.Minute))
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{"classic"}
		resp, err := b.Request(ctx, dg)
		require.NoError(t, err)
		assert.Equal(t, "Empty", resp.(*kmsg.DescribeGroupsResponse).Groups[0].State, "kept (Dead: forgotten)")
	})
}

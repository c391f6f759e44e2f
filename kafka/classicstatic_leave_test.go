package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroups_LeaveByInstanceEndsTheRemovedMembersJoin: a static member
// removed by a LeaveGroup that names its instance alone (an administrator's
// removal) while its join waits in a join phase gets UNKNOWN_MEMBER_ID at
// once, as Kafka's coordinator answers it. Before, the join waited on until
// the phase ended: the other members' joins, or the rebalance timeout
// (here five minutes).
func TestGroups_LeaveByInstanceEndsTheRemovedMembersJoin(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	addr := serve(t, e, nil)
	br := kclient(t, addr).SeedBrokers()[0]
	ja := requestJoin(ctx, t, br, classicJoinReq("", "i1", "a", 30000, 300000))
	require.Equal(t, int16(0), ja.ErrorCode)
	require.Equal(t, int16(0), classicSync(ctx, t, br, ja.MemberID, "i1", ja.Generation, map[string]string{ja.MemberID: "A"}).ErrorCode)

	// b's join begins a join phase that waits for a.
	jb := joinAsync(ctx, t, addr, classicJoinReq("", "i2", "b", 30000, 300000))
	require.Eventually(t, func() bool {
		return classicBeat(ctx, t, br, ja.MemberID, "i1", ja.Generation) == 27
	}, 30*time.Second, 10*time.Millisecond, "b's join begins a rebalance")

	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Group = "g"
	lg.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: kmsg.StringPtr("i2")}}
	resp, err := br.Request(ctx, lg)
	require.NoError(t, err)
	r := resp.(*kmsg.LeaveGroupResponse)
	require.Len(t, r.Members, 1)
	require.Equal(t, int16(0), r.Members[0].ErrorCode)

	select {
	case rb := <-jb:
		require.NotNil(t, rb)
		assert.Equal(t, int16(25), rb.ErrorCode, "UNKNOWN_MEMBER_ID: removed")
	case <-time.After(20 * time.Second):
		t.Fatal("the removed member's join still waits for the join phase to end")
	}
}

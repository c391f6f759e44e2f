package remote_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestClient_StartTimesPastTheWireRangeStartAsInProcess joins groups from
// a time, and resets groups to a time, after 2262 ("after every message":
// the queue's end) and before 1678 ("before every message": its start),
// in process and over a client: each starts at the same offset. Before,
// the client sent such a time as Unix nanoseconds that wrapped around to
// another date: a time after every message rewound the group to the start
// of its queues (delivering every message again), and one before every
// message skipped them all.
func TestClient_StartTimesPastTheWireRangeStartAsInProcess(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for i := range 3 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "m-%d", i)}}})
		require.NoError(t, err)
	}
	type resetter interface {
		ResetOffsets(ctx context.Context, group string, req equeue.ResetRequest) error
	}
	for _, at := range []time.Time{time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)} {
		want := map[bool]int64{true: 3, false: 0}[at.After(time.Now())]
		for name, b := range map[string]equeue.Broker{"engine": e, "remote": c} {
			t.Run(fmt.Sprintf("%d/%s", at.Year(), name), func(t *testing.T) {
				g := fmt.Sprintf("join-%d-%s", at.Year(), name)
				a, err := b.JoinGroup(ctx, &equeue.JoinRequest{Group: g, Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}},
					From: equeue.ConsumeFromTimestamp, FromTime: at})
				require.NoError(t, err)
				offs, err := b.FetchOffsets(ctx, g, "m", a.Queues)
				require.NoError(t, err)
				require.Len(t, offs, 1)
				assert.Equal(t, want, offs[0].Offset, "joined from %v", at)
				require.NoError(t, b.LeaveGroup(ctx, &equeue.LeaveRequest{Group: g, Member: "m"}))

				// A group at the other end of its queue is reset to at.
				g = fmt.Sprintf("reset-%d-%s", at.Year(), name)
				other := map[bool]equeue.ConsumeFrom{true: equeue.ConsumeFromEarliest, false: equeue.ConsumeFromLatest}[want == 3]
				a, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: g, Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: other})
				require.NoError(t, err)
				require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: g, Member: "m",
					Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 3 - want}}}))
				require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: g, Member: "m"}))
				require.NoError(t, b.(resetter).ResetOffsets(ctx, g, equeue.ResetRequest{To: equeue.ResetToTime, Time: at}))
				a, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: g, Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
				require.NoError(t, err)
				offs, err = e.FetchOffsets(ctx, g, "m", a.Queues)
				require.NoError(t, err)
				require.Len(t, offs, 1)
				assert.Equal(t, want, offs[0].Offset, "reset to %v", at)
				require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: g, Member: "m"}))
			})
		}
	}
}

package remote_test

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A queue number travels as an int32. One outside that range was clamped
// to its nearest bound (queue 2^31-1 or -2^31) and sent as that other
// queue: the broker answered for a queue the caller never named (or, for
// a release, answered nothing at all). Every call that takes a queue now
// refuses such a number before it is sent, with equeue.ErrInvalidArgument
// (and ErrQueueNotFound: no topic has that queue), naming the number the
// caller gave, and nothing is changed.
func TestClient_QueueOutOfTheWireRangeIsRefused(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("an int cannot hold a queue number beyond int32 here")
	}
	above := int(int64(math.MaxInt32) + 1)
	below := int(int64(math.MinInt32) - 1)
	for _, q := range []int{above, below, math.MaxInt, math.MinInt} {
		t.Run(strconv.Itoa(q), func(t *testing.T) {
			ctx := ctxT(t)
			e, c := setup(t, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			require.NoError(t, e.SetQueueWritable(ctx, "t", 1, false))
			a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m",
				Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			require.NotEmpty(t, a.Queues)
			grant := a.Queues[0]
			grant.Queue = q
			refused := func(what string, err error) {
				t.Helper()
				require.Error(t, err, what)
				assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "%s: %v", what, err)
				assert.ErrorIs(t, err, equeue.ErrQueueNotFound, "%s: %v", what, err)
				assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "%s: %v", what, err)
				assert.Contains(t, err.Error(), strconv.Itoa(q), "%s names the caller's queue", what)
			}

			msg := func() []*equeue.Message { return []*equeue.Message{{Body: []byte("x")}} }
			_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: msg()})
			refused("append", err)
			done := make(chan error, 1)
			c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: msg()}, func(_ equeue.AppendResult, err error) { done <- err })
			refused("append async", <-done)
			_, err = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: q, Max: 1})
			refused("pull", err)
			_, err = c.Pull(ctx, &equeue.PullRequest{Group: "g", Member: "m", Topic: "t", Queue: q, Max: 1, Wait: 1})
			refused("group pull", err)
			refused("set writable", c.SetQueueWritable(ctx, "t", q, false))
			refused("reset offsets", c.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToOffsets,
				Offsets: map[equeue.QueueRef]int64{{Topic: "t", Queue: q}: 0}}))
			refused("commit", c.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
				Offsets: []equeue.OffsetCommit{{Grant: grant, Offset: 0}}}))
			_, err = c.FetchOffsets(ctx, "g", "m", []equeue.Grant{grant})
			refused("fetch offsets", err)
			refused("release", c.ReleaseQueues(ctx, "g", "m", []equeue.Grant{grant}))
			_, err = c.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: grant})
			refused("send back", err)

			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Len(t, info.Queues, 2)
			for _, qi := range info.Queues {
				assert.Equal(t, int64(0), qi.MaxOffset, "queue %d: nothing stored", qi.ID)
				assert.Equal(t, qi.ID == 0, qi.Writable, "queue %d: writability unchanged", qi.ID)
			}
			g, err := e.Group(ctx, "g")
			require.NoError(t, err)
			require.NotEmpty(t, g.Members, "the member still holds its queues")
		})
	}
}

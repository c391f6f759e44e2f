package remote_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Counts and bounds other than queue numbers travel as int32 too. A count
// whose meaning a clamp would change (an attempt count the broker stores,
// a queue or priority count) is refused before it is sent with
// equeue.ErrInvalidArgument, naming the caller's value: before, it was
// clamped to the range's bound and a send-back or a commit stored 2^31-1
// attempts the caller never counted. A bound (a pull's Max and MaxBytes, a
// listing's size) is still clamped: the clamped value keeps its sign and
// is as far beyond what the broker allows or can answer, so the call's
// outcome is the engine's in-process one.
func TestClient_Int32NarrowingIsRefusedOrHarmless(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("an int cannot hold a value beyond int32 here")
	}
	above := int(int64(math.MaxInt32) + 1)
	below := int(int64(math.MinInt32) - 1)
	for _, v := range []int{above, below, math.MaxInt, math.MinInt} {
		t.Run(strconv.Itoa(v), func(t *testing.T) {
			ctx := ctxT(t)
			e, c := setup(t, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}, {Body: []byte("y")}}})
			require.NoError(t, err)
			a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m",
				Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			require.Len(t, a.Queues, 1)
			grant := a.Queues[0]
			// The member pulls both messages: a send-back of one is valid.
			pulled, err := e.Pull(ctx, &equeue.PullRequest{Group: "g", Member: "m", Topic: "t", Queue: grant.Queue, Epoch: grant.Epoch, Max: 2})
			require.NoError(t, err)
			require.Len(t, pulled.Messages, 2)

			refused := func(what string, err error) {
				t.Helper()
				require.Error(t, err, what)
				assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "%s: %v", what, err)
				assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "%s: %v", what, err)
				assert.Contains(t, err.Error(), strconv.Itoa(v), "%s names the caller's value", what)
			}
			refused("create topic", c.CreateTopic(ctx, "u", v))
			refused("create topic with queues", c.CreateTopicWith(ctx, "u", equeue.TopicOptions{Queues: v}))
			refused("create topic with priorities", c.CreateTopicWith(ctx, "u", equeue.TopicOptions{Queues: 1, Priorities: v}))
			refused("add queues", c.AddQueues(ctx, "t", v))
			_, err = c.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: grant, Offset: 0, Attempts: v})
			refused("send back", err)
			refused("commit attempts", c.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
				Offsets: []equeue.OffsetCommit{{Grant: grant, Offset: 0, Attempts: []equeue.MessageAttempts{{Offset: 1, Attempts: v}}}}}))

			// Nothing was done.
			_, err = e.Topic(ctx, "u")
			assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			assert.Len(t, info.Queues, 1)
			if rt, err := e.Topic(ctx, equeue.RetryTopic("g")); err == nil {
				assert.Zero(t, rt.Messages, "no send-back was stored")
			}
			if dt, err := e.Topic(ctx, equeue.DLQTopic("g")); err == nil {
				assert.Zero(t, dt.Messages, "nothing was dead-lettered")
			}
			g, err := e.Group(ctx, "g")
			require.NoError(t, err)
			for _, q := range g.Queues {
				assert.Equal(t, int64(-1), q.Committed, "no commit was stored")
			}

			// Bounds: clamped, with the engine's own outcome.
			same := func(what string, local, got error) {
				t.Helper()
				assert.Equal(t, local == nil, got == nil, "%s: in-process %v, remote %v", what, local, got)
				assert.Equal(t, errors.Is(local, equeue.ErrInvalidArgument), errors.Is(got, equeue.ErrInvalidArgument),
					"%s: in-process %v, remote %v", what, local, got)
				assert.NotErrorIs(t, got, equeue.ErrIndeterminate, what)
			}
			for _, b := range []struct {
				what string
				call func(ctx context.Context, br equeue.Broker) error
			}{
				{"pull max", func(ctx context.Context, br equeue.Broker) error {
					_, err := br.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: v})
					return err
				}},
				{"pull max bytes", func(ctx context.Context, br equeue.Broker) error {
					_, err := br.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 2, MaxBytes: v})
					return err
				}},
			} {
				same(b.what, b.call(ctx, e), b.call(ctx, c))
			}
			_, lerr := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: v})
			_, rerr := c.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: v})
			same("list dead letters", lerr, rerr)
			_, lerr = e.Delayed(ctx, v)
			_, rerr = c.Delayed(ctx, v)
			same("delayed", lerr, rerr)
			if v > 0 {
				res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 2, MaxBytes: v})
				require.NoError(t, err)
				assert.Len(t, res.Messages, 2, "a bound past int32 bounds nothing")
			}
		})
	}
}

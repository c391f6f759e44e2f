package remote_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// TestRemote_BadArgumentsGetTheSameErrorWhateverTheState sends bad
// arguments through a client to an engine that has neither the topic nor
// the group they name, and to one that has both, with a dead letter: each
// gets the same sentinel over both, as in process.
func TestRemote_BadArgumentsGetTheSameErrorWhateverTheState(t *testing.T) {
	ref0 := equeue.QueueRef{Topic: "t"}
	grant0 := equeue.Grant{QueueRef: ref0}
	cases := []struct {
		name string
		call func(ctx context.Context, c *remote.Client) error
		want error
	}{
		{"AddQueues 0", func(ctx context.Context, c *remote.Client) error { return c.AddQueues(ctx, "t", 0) }, equeue.ErrInvalidArgument},
		{"AddQueues huge", func(ctx context.Context, c *remote.Client) error { return c.AddQueues(ctx, "t", math.MaxInt32) }, equeue.ErrInvalidArgument},
		{"Append nil message", func(ctx context.Context, c *remote.Client) error {
			_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{nil}})
			return err
		}, equeue.ErrInvalidArgument},
		{"Append negative delay", func(ctx context.Context, c *remote.Client) error {
			_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Delay: -time.Second}}})
			return err
		}, equeue.ErrInvalidDelay},
		{"Route of an internal topic", func(ctx context.Context, c *remote.Client) error { _, err := c.Route(ctx, "%DLQ%g"); return err }, equeue.ErrInternalTopic},
		{"Redrive of nothing", func(ctx context.Context, c *remote.Client) error {
			_, err := c.Redrive(ctx, "g", equeue.RedriveRequest{})
			return err
		}, equeue.ErrInvalidArgument},
		{"Redrive of a negative offset", func(ctx context.Context, c *remote.Client) error {
			_, err := c.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{-1}})
			return err
		}, equeue.ErrInvalidArgument},
		{"ResetOffsets to an unknown target", func(ctx context.Context, c *remote.Client) error {
			return c.ResetOffsets(ctx, "g", equeue.ResetRequest{To: 99})
		}, equeue.ErrInvalidArgument},
		{"ResetOffsets to a negative offset", func(ctx context.Context, c *remote.Client) error {
			return c.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: map[equeue.QueueRef]int64{ref0: -1}})
		}, equeue.ErrInvalidArgument},
		{"Heartbeat without member", func(ctx context.Context, c *remote.Client) error {
			_, err := c.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g"})
			return err
		}, equeue.ErrInvalidArgument},
		{"LeaveGroup without member", func(ctx context.Context, c *remote.Client) error {
			return c.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g"})
		}, equeue.ErrInvalidArgument},
		{"CommitOffsets without member", func(ctx context.Context, c *remote.Client) error {
			return c.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Offsets: []equeue.OffsetCommit{{Grant: grant0}}})
		}, equeue.ErrInvalidArgument},
		{"FetchOffsets without member", func(ctx context.Context, c *remote.Client) error {
			_, err := c.FetchOffsets(ctx, "g", "", []equeue.Grant{grant0})
			return err
		}, equeue.ErrInvalidArgument},
		{"ReleaseQueues without member", func(ctx context.Context, c *remote.Client) error {
			return c.ReleaseQueues(ctx, "g", "", []equeue.Grant{grant0})
		}, equeue.ErrInvalidArgument},
		{"DeadLetters of a bad group name", func(ctx context.Context, c *remote.Client) error {
			_, err := c.DeadLetters(ctx, "a b", 0, 1)
			return err
		}, equeue.ErrInvalidName},
	}
	for _, populated := range []bool{false, true} {
		name := "fresh"
		if populated {
			name = "populated"
		}
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			e, client := setup(t, nil)
			if populated {
				require.NoError(t, e.CreateTopic(ctx, "t", 1))
				_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
				require.NoError(t, err)
				a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
				require.NoError(t, err)
				require.Len(t, a.Queues, 1)
				res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 1, Group: "g", Member: "m", Epoch: a.Queues[0].Epoch})
				require.NoError(t, err)
				require.Len(t, res.Messages, 1)
				_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: a.Queues[0], Offset: res.Messages[0].Offset, DeadLetter: true})
				require.NoError(t, err)
			}
			for _, c := range cases {
				var err error
				require.NotPanics(t, func() { err = c.call(ctx, client) }, c.name)
				assert.ErrorIs(t, err, c.want, c.name)
			}
		})
	}
}

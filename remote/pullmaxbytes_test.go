package remote_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// PullRequest.MaxBytes bounds a pull over remote as in-process: a plain
// pull, a group member's long-poll (with read-ahead and without) answer
// only the messages within it, and a first message larger than it fails
// with ErrMessageTooLarge.
func TestPull_MaxBytesAsInProcess(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 10 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: bytes.Repeat([]byte("m"), 1<<10)}}})
		require.NoError(t, err)
	}
	for name, b := range map[string]equeue.Broker{"inproc": e, "ahead": dial(t, s.addr, nil),
		"no-ahead": dial(t, s.addr, &remote.ClientOptions{PullAhead: -1})} {
		t.Run(name, func(t *testing.T) {
			res, err := b.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10, MaxBytes: 2500})
			require.NoError(t, err)
			assert.Len(t, res.Messages, 2, "plain pull")
			_, err = b.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10, MaxBytes: 500})
			assert.ErrorIs(t, err, equeue.ErrMessageTooLarge, "plain pull of a first message past the bound")

			a, err := b.JoinGroup(ctx, &equeue.JoinRequest{Group: "g-" + name, Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			t.Cleanup(func() { _ = b.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g-" + name, Member: "m"}) })
			member := &equeue.PullRequest{Topic: "t", Group: "g-" + name, Member: "m", Epoch: a.Queues[0].Epoch,
				Max: 10, MaxBytes: 2500, Wait: time.Second}
			res, err = b.Pull(ctx, member)
			require.NoError(t, err)
			assert.Len(t, res.Messages, 2, "member's long-poll")
			member.MaxBytes = 500
			_, err = b.Pull(ctx, member)
			assert.ErrorIs(t, err, equeue.ErrMessageTooLarge, "member's long-poll of a first message past the bound")
		})
	}
}

package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A client that keeps its member ID across the server's restart on the
// same directory has its grant from before the restart fenced off: the
// restarted engine granted the same epochs again, so the old grant's
// commit, pull and send-back passed, and the commit moved the group's
// offset back.
func TestRemote_AGrantFromBeforeARestartIsFenced(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	e1, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	s1 := startServer(t, e1, "", nil)
	c := dial(t, s1.addr, nil)
	require.NoError(t, c.CreateTopic(ctx, "t", 1))
	for range 5 {
		_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m")}}})
		require.NoError(t, err)
	}
	join := &equeue.JoinRequest{Group: "g", Member: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Incarnation: "1"}
	old, err := c.JoinGroup(ctx, join)
	require.NoError(t, err)
	require.Len(t, old.Queues, 1)
	og := old.Queues[0]
	_, err = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 5, Group: "g", Member: "a", Epoch: og.Epoch})
	require.NoError(t, err)

	s1.stop()
	require.NoError(t, e1.Close())
	e2, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e2.Close()) })
	s2 := startServer(t, e2, s1.addr, nil)
	defer s2.stop()

	var a equeue.Assignment
	eventually(t, 20*time.Second, func() bool {
		a, err = c.JoinGroup(ctx, join)
		return err == nil
	}, "the client joins the restarted server under its member ID: %v", err)
	require.Len(t, a.Queues, 1)
	ng := a.Queues[0]
	_, err = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 5, Group: "g", Member: "a", Epoch: ng.Epoch})
	require.NoError(t, err)
	require.NoError(t, c.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a",
		Offsets: []equeue.OffsetCommit{{Grant: ng, Offset: 3}}}))

	err = c.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a",
		Offsets: []equeue.OffsetCommit{{Grant: og, Offset: 1}}})
	require.ErrorIs(t, err, equeue.ErrFenced, "a commit under the grant from before the restart (epoch %d; now %d)", og.Epoch, ng.Epoch)
	_, err = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 5, Group: "g", Member: "a", Epoch: og.Epoch})
	require.ErrorIs(t, err, equeue.ErrFenced, "a pull under the grant from before the restart")
	_, err = c.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "a", Grant: og, Offset: 3, Attempts: 1})
	require.ErrorIs(t, err, equeue.ErrFenced, "a send-back under the grant from before the restart")

	offs, err := c.FetchOffsets(ctx, "g", "a", a.Queues)
	require.NoError(t, err)
	assert.Equal(t, int64(3), offs[0].Offset, "the old grant moved nothing")
}

package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A commit carries its member's incarnation over the wire: once another
// incarnation took the member ID, a late commit of the one it replaced is
// refused (equeue.ErrNotMember) and the broadcasting member's offset stays
// where the new one committed it. A commit naming no incarnation (a client
// from before the field) is taken as before.
func TestCommitOffsets_StaleIncarnationRefusedOverTheWire(t *testing.T) {
	e, c := setup(t, &equeue.Options{SessionTimeout: time.Hour})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("1")}, {Body: []byte("2")}, {Body: []byte("3")}}})
	require.NoError(t, err)
	subs := []equeue.Subscription{{Topic: "t"}}
	join := func(inc string) equeue.Grant {
		a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "a", Model: equeue.Broadcasting, Subscriptions: subs, Incarnation: inc})
		require.NoError(t, err)
		require.Len(t, a.Queues, 1)
		return a.Queues[0]
	}
	commit := func(inc string, g equeue.Grant, off int64) error {
		return c.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a", Incarnation: inc,
			Offsets: []equeue.OffsetCommit{{Grant: g, Offset: off}}})
	}
	committed := func() int64 {
		gi, err := e.Group(ctx, "g")
		require.NoError(t, err)
		require.Len(t, gi.Queues, 1)
		return gi.Queues[0].Committed
	}

	oldGrant := join("old")
	require.NoError(t, commit("old", oldGrant, 1))
	// The old incarnation goes (a leave naming none) and a new one joins.
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "a"}))
	newGrant := join("new")
	require.NoError(t, commit("new", newGrant, 3))

	err = commit("old", oldGrant, 2)
	assert.ErrorIs(t, err, equeue.ErrNotMember, "the replaced incarnation's commit is refused")
	assert.Equal(t, int64(3), committed(), "and stored nothing")

	require.NoError(t, commit("", oldGrant, 2), "a commit naming no incarnation is not checked")
	assert.Equal(t, int64(2), committed())
}

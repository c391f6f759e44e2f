package cluster_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// A leader that does not hold its lease serves nothing: reads and writes
// are refused with a *NotLeaderError (nothing done), and served again
// once it holds the lease.
func TestNode_ServesOnlyWithItsLease(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.waitLeader()
	e, err := l.Engine()
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(t.Context(), "t", 1))
	_, err = l.Append(t.Context(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
	require.NoError(t, err)

	cluster.DropLease(l)
	var nl *cluster.NotLeaderError
	_, err = l.Engine()
	require.True(t, errors.As(err, &nl), "Engine: %v", err)
	_, err = l.Pull(t.Context(), &equeue.PullRequest{Topic: "t"})
	require.True(t, errors.As(err, &nl), "Pull: %v", err)
	require.ErrorIs(t, err, equeue.ErrNotLeader)
	_, err = l.Route(t.Context(), "t")
	require.True(t, errors.As(err, &nl), "Route: %v", err)
	_, err = l.Append(t.Context(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("b")}}})
	require.True(t, errors.As(err, &nl), "Append: %v", err)

	cluster.RestoreLease(l)
	res, err := l.Pull(t.Context(), &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1, "only the write made with the lease is stored")
}

package remote_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// leaderLostDuringWrite is an old leader whose every append is stored,
// then answered as a leader losing its leadership with the write in
// flight answers it: unknown outcome, no longer the leader, naming the
// new one (leader).
type leaderLostDuringWrite struct {
	*equeue.Engine
	leader  atomic.Pointer[string]
	appends atomic.Int64
}

func (b *leaderLostDuringWrite) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	b.appends.Add(1)
	if _, err := b.Engine.Append(ctx, req); err != nil {
		return equeue.AppendResult{}, err
	}
	return equeue.AppendResult{}, lostLeadershipErr{leader: *b.leader.Load()}
}

// A ClusterClient whose append the leader answered "unknown outcome, no
// longer the leader, the leader is now B" returned the error as it should
// (never sending the append again), but kept the old leader: it neither
// followed B, named in the error, nor forgot the old one, as its doc says
// it does when the leader lost its leadership during the write. The next
// call went to the old leader again. It now takes B for the leader, and
// still sends nothing again: B stores nothing.
func TestClusterClient_UnknownOutcomeFollowsTheLeaderItNames(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			ctx := ctxT(t)
			newEngine := openEngine(t, nil)
			require.NoError(t, newEngine.CreateTopic(ctx, "t", 1))
			newLeader := startServer(t, newEngine, "", nil)

			oldEngine := openEngine(t, nil)
			require.NoError(t, oldEngine.CreateTopic(ctx, "t", 1))
			b := &leaderLostDuringWrite{Engine: oldEngine}
			b.leader.Store(&newLeader.addr)
			srv, err := remote.NewBackendServer(b, nil)
			require.NoError(t, err)
			old := serve(t, srv, "")

			cc, err := remote.DialCluster([]string{old.addr}, nil)
			require.NoError(t, err)
			defer func() { require.NoError(t, cc.Close()) }()
			if async {
				// Learn the leader first, so that AppendAsync takes its stream.
				_, err := cc.Route(ctx, "t")
				require.NoError(t, err)
				require.Equal(t, old.addr, cc.Leader())
			}

			req := &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("once")}}}
			if async {
				done := make(chan error, 1)
				cc.AppendAsync(ctx, req, func(_ equeue.AppendResult, err error) { done <- err })
				err = <-done
			} else {
				_, err = cc.Append(ctx, req)
			}
			require.ErrorIs(t, err, equeue.ErrIndeterminate)
			require.ErrorIs(t, err, equeue.ErrNotLeader)
			var re *remote.Error
			require.True(t, errors.As(err, &re), "%v", err)
			assert.Equal(t, newLeader.addr, re.Leader)
			assert.Equal(t, newLeader.addr, cc.Leader(), "the leader the answer names")
			assert.Equal(t, int64(1), b.appends.Load(), "appends the old leader got")
			res, err := newEngine.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
			require.NoError(t, err)
			assert.Empty(t, res.Messages, "the append was sent again to the new leader")

			// The next append goes to the new leader at once.
			_, err = cc.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("next")}}})
			require.NoError(t, err)
			assert.Equal(t, int64(1), b.appends.Load(), "appends the old leader got")
		})
	}
}

package remote_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// unknownAfterLeaderLoss is an engine whose first append fails as a
// leader's engine fails a write after an earlier one of its tenure lost
// the leadership: the outcome is unknown (ErrIndeterminate), and the cause
// it wraps matches equeue.ErrNotLeader.
type unknownAfterLeaderLoss struct {
	*equeue.Engine
	appends atomic.Int64
}

func (b *unknownAfterLeaderLoss) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	if b.appends.Add(1) == 1 {
		lost := fmt.Errorf("%w: leadership lost", equeue.ErrNotLeader)
		return equeue.AppendResult{}, fmt.Errorf("%w: after a failed write: %w", equeue.ErrIndeterminate, lost)
	}
	return b.Engine.Append(ctx, req)
}

// A ClusterClient retried every error matching equeue.ErrNotLeader as a
// refusal that stored nothing, also one matching equeue.ErrIndeterminate
// too: an append that may have been stored was sent again (a second copy
// without a dedup ID) and reported stored once. Now an unknown outcome is
// returned as it is, through Append and AppendAsync alike.
func TestClusterClient_UnknownOutcomeIsNotRetried(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			e := openEngine(t, nil)
			require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
			b := &unknownAfterLeaderLoss{Engine: e}
			srv, err := remote.NewBackendServer(b, nil)
			require.NoError(t, err)
			s := serve(t, srv, "")
			cc, err := remote.DialCluster([]string{s.addr}, nil)
			require.NoError(t, err)
			defer func() { require.NoError(t, cc.Close()) }()
			if async {
				// Learn the leader first, so that AppendAsync takes its stream.
				_, err := cc.Route(ctxT(t), "t")
				require.NoError(t, err)
				require.Equal(t, s.addr, cc.Leader())
			}

			req := &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("once")}}}
			if async {
				done := make(chan error, 1)
				cc.AppendAsync(ctxT(t), req, func(_ equeue.AppendResult, err error) { done <- err })
				err = <-done
			} else {
				_, err = cc.Append(ctxT(t), req)
			}
			require.ErrorIs(t, err, equeue.ErrIndeterminate)
			assert.Equal(t, int64(1), b.appends.Load(), "the append was sent again")
		})
	}
}

// leaderLostOnce is an engine whose first group join and first offset
// commit fail as a leader's engine fails a write whose leader lost its
// leadership before the write committed: the outcome is unknown
// (ErrIndeterminate), with Raft's cause, which is no refusal.
type leaderLostOnce struct {
	*equeue.Engine
	joins, commits atomic.Int64
}

var errLeadershipLost = fmt.Errorf("%w: leadership lost while committing log", equeue.ErrIndeterminate)

func (b *leaderLostOnce) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	if b.joins.Add(1) == 1 {
		return equeue.Assignment{}, errLeadershipLost
	}
	return b.Engine.JoinGroup(ctx, req)
}

func (b *leaderLostOnce) CommitOffsets(ctx context.Context, req *equeue.CommitRequest) error {
	if b.commits.Add(1) == 1 {
		return errLeadershipLost
	}
	return b.Engine.CommitOffsets(ctx, req)
}

// The calls a ClusterClient repeats when a node cannot be reached, since
// repeating them changes nothing twice (group membership, offsets), were
// not repeated after an unknown outcome the leader answered when it lost
// its leadership during their write: a Consumer's Start through a cluster
// failed in an election. They are sent again, to the next leader.
func TestClusterClient_RepeatableCallRetriedAfterAnUnknownOutcome(t *testing.T) {
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	b := &leaderLostOnce{Engine: e}
	srv, err := remote.NewBackendServer(b, nil)
	require.NoError(t, err)
	s := serve(t, srv, "")
	cc, err := remote.DialCluster([]string{s.addr}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()

	a, err := cc.JoinGroup(ctxT(t), &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err, "join")
	require.Len(t, a.Queues, 1)
	assert.Equal(t, int64(2), b.joins.Load())
	require.NoError(t, cc.CommitOffsets(ctxT(t), &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 0}}}), "commit")
	assert.Equal(t, int64(2), b.commits.Load())
}

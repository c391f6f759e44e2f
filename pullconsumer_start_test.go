package equeue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// startBroker fails a PullConsumer's first JoinGroup or FetchOffsets when
// told to, and can hold a JoinGroup until released.
type startBroker struct {
	equeue.Broker
	failJoin, failFetch atomic.Int32 // calls left to fail
	entered, release    chan struct{}
}

func (b *startBroker) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	if b.failJoin.Add(-1) >= 0 {
		return equeue.Assignment{}, errors.New("injected join failure")
	}
	if b.entered != nil {
		close(b.entered)
		<-b.release
	}
	return b.Broker.JoinGroup(ctx, req)
}

func (b *startBroker) FetchOffsets(ctx context.Context, group, member string, grants []equeue.Grant) ([]equeue.OffsetCommit, error) {
	if b.failFetch.Add(-1) >= 0 {
		return nil, errors.New("injected fetch failure")
	}
	return b.Broker.FetchOffsets(ctx, group, member, grants)
}

// groupMembers lists the IDs of group's members.
func groupMembers(t *testing.T, e *equeue.Engine, group string) []string {
	t.Helper()
	info, err := e.Group(ctxT(t), group)
	if errors.Is(err, equeue.ErrGroupNotFound) {
		return nil
	}
	require.NoError(t, err)
	var ids []string
	for _, m := range info.Members {
		ids = append(ids, m.ID)
	}
	return ids
}

// A PullConsumer whose Start failed (its join, or the offsets of the
// queues it was granted) is no member of the group, and can be started
// again.
func TestPullConsumer_StartFailsCleanlyAndCanBeRetried(t *testing.T) {
	for _, what := range []string{"join", "fetch offsets"} {
		t.Run(what, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			b := &startBroker{Broker: e}
			if what == "join" {
				b.failJoin.Store(1)
			} else {
				b.failFetch.Store(1)
			}
			pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "pg", ID: "p", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			defer func() { require.NoError(t, pc.Close()) }()
			require.Error(t, pc.Start(ctx))
			assert.Empty(t, groupMembers(t, e, "pg"), "no member left behind by the failed Start")
			require.NoError(t, pc.Start(ctx), "started again")
			assert.Equal(t, []string{"p"}, groupMembers(t, e, "pg"))
		})
	}
}

// A Close that comes while Start is joining: Start returns ErrClosed and
// leaves no member behind.
func TestPullConsumer_CloseDuringStartLeavesNoMember(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := &startBroker{Broker: e, entered: make(chan struct{}), release: make(chan struct{})}
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "pg", ID: "p", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- pc.Start(ctx) }()
	<-b.entered
	require.NoError(t, pc.Close())
	close(b.release)
	assert.ErrorIs(t, <-started, equeue.ErrClosed)
	assert.Empty(t, groupMembers(t, e, "pg"), "the closed pull consumer is no member")
}

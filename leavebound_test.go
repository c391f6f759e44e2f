package equeue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// boundKey marks a context with the name of the call that made it.
type boundKey struct{}

// silentLeaveBroker is an engine (a broker of its own, as a remote one
// is) whose joins wait until joinGo is closed, after telling joining, and
// whose leaves go unanswered (a silent connection): each waits for its
// context to end, and the names its contexts carry (boundKey) are kept.
type silentLeaveBroker struct {
	*equeue.Engine
	joining chan struct{}
	joinGo  chan struct{}
	fetch   error // FetchOffsets fails with it when set

	mu     sync.Mutex
	leaves []any
	left   chan struct{}
}

func newSilentLeaveBroker(e *equeue.Engine) *silentLeaveBroker {
	return &silentLeaveBroker{Engine: e, joining: make(chan struct{}, 1), joinGo: make(chan struct{}), left: make(chan struct{}, 8)}
}

func (b *silentLeaveBroker) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	select {
	case b.joining <- struct{}{}:
	default:
	}
	<-b.joinGo
	return b.Engine.JoinGroup(ctx, req)
}

func (b *silentLeaveBroker) FetchOffsets(ctx context.Context, g, m string, q []equeue.Grant) ([]equeue.OffsetCommit, error) {
	if b.fetch != nil {
		return nil, b.fetch
	}
	return b.Engine.FetchOffsets(ctx, g, m, q)
}

func (b *silentLeaveBroker) LeaveGroup(ctx context.Context, _ *equeue.LeaveRequest) error {
	b.mu.Lock()
	b.leaves = append(b.leaves, ctx.Value(boundKey{}))
	b.mu.Unlock()
	b.left <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

// leaveBounds returns the names the leaves' contexts carried.
func (b *silentLeaveBroker) leaveBounds() []any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]any(nil), b.leaves...)
}

// A Consumer closed with CloseContext while its Start joins, over a
// broker that answers no leave: the leave Start makes once its join
// returned (Close found no member to leave) is bounded by the
// CloseContext's context, not by a fixed 10 s.
func TestConsumer_LeaveAfterCloseDuringStartIsBoundedByCloseContext(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	b := newSilentLeaveBroker(e)
	c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "a",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- c.Start(context.WithValue(context.Background(), boundKey{}, "start")) }()
	<-b.joining

	cctx, cancel := context.WithCancel(context.WithValue(context.Background(), boundKey{}, "close"))
	closed := make(chan error, 1)
	go func() { closed <- c.CloseContext(cctx) }()
	<-b.left // Close's own leave, unanswered
	cancel()
	require.ErrorIs(t, <-closed, context.Canceled)
	close(b.joinGo)
	require.ErrorIs(t, <-started, equeue.ErrClosed)
	assert.Equal(t, []any{"close", "close"}, b.leaveBounds(), "Start's leave is bounded by the CloseContext's context")
}

// The same for a PullConsumer.
func TestPullConsumer_LeaveAfterCloseDuringStartIsBoundedByCloseContext(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	b := newSilentLeaveBroker(e)
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", ID: "a",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- pc.Start(context.WithValue(context.Background(), boundKey{}, "start")) }()
	<-b.joining

	cctx, cancel := context.WithCancel(context.WithValue(context.Background(), boundKey{}, "close"))
	closed := make(chan error, 1)
	go func() { closed <- pc.CloseContext(cctx) }()
	<-b.left // Close's own leave, unanswered
	cancel()
	require.ErrorIs(t, <-closed, context.Canceled)
	close(b.joinGo)
	require.ErrorIs(t, <-started, equeue.ErrClosed)
	assert.Equal(t, []any{"close", "close"}, b.leaveBounds(), "Start's leave is bounded by the CloseContext's context")
}

// A PullConsumer's Start whose join's grants cannot be used leaves the
// group within Start's own context, not within a fixed 10 s.
func TestPullConsumer_LeaveAfterAFailedStartIsBoundedByStartsContext(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	b := newSilentLeaveBroker(e)
	close(b.joinGo)
	refused := errors.New("test: fetch refused")
	b.fetch = refused
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", ID: "a",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(context.WithValue(context.Background(), boundKey{}, "start"))
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- pc.Start(sctx) }()
	<-b.left // the leave of the failed Start, unanswered
	cancel()
	require.ErrorIs(t, <-started, refused)
	assert.Equal(t, []any{"start"}, b.leaveBounds(), "the leave is bounded by Start's context")
	require.NoError(t, pc.Close())
}

package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/holdproxy"
)

// TestPullConsumer_CloseContextBoundsTheLeaveOnASilentBroker: a
// PullConsumer over a connection that went silent (no byte passes,
// nothing closes) is closed with a context the test cancels: CloseContext
// returns the context's error, once its own goroutines ended, instead of
// waiting for the leave's answer until Close's own bound, and no goroutine
// is left (goleak, TestMain).
func TestPullConsumer_CloseContextBoundsTheLeaveOnASilentBroker(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", nil)
	proxy := holdproxy.New(t, s.addr)
	c := dial(t, proxy.Addr(), nil)
	pc, err := equeue.NewPullConsumer(c, equeue.PullConsumerOptions{Group: "g", ID: "p1", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		HeartbeatInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	require.Len(t, pc.Assigned(), 1)

	proxy.Hang()
	cctx, cancel := context.WithCancel(ctx)
	closed := make(chan error, 1)
	go func() { closed <- pc.CloseContext(cctx) }()
	cancel()
	select {
	case err := <-closed:
		require.Error(t, err)
		assert.ErrorIs(t, err, context.Canceled, "the leave was not bounded by CloseContext's context")
	case <-time.After(30 * time.Second):
		t.Fatal("CloseContext did not return")
	}
	// Closed: a Close again returns nil, and Fetch refuses.
	require.NoError(t, pc.Close())
	_, err = pc.Fetch(ctx, equeue.QueueRef{Topic: "t"}, 1, 0)
	assert.ErrorIs(t, err, equeue.ErrClosed)
	proxy.LetGo()
}

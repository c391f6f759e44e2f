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

// TestConsumer_CloseContextBoundsTheCommitAndLeaveOnASilentBroker: a
// Consumer over a connection that went silent (no byte passes, nothing
// closes) is closed with a context the test cancels: CloseContext returns
// an error matching the context's, once the consumer's own goroutines
// ended, instead of waiting for the final commit's and the leave's answers
// until Close's own bound, and no goroutine is left (goleak, TestMain).
func TestConsumer_CloseContextBoundsTheCommitAndLeaveOnASilentBroker(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", nil)
	proxy := holdproxy.New(t, s.addr)
	c := dial(t, proxy.Addr(), nil)
	handled := make(chan struct{}, 1)
	cons, err := equeue.NewConsumer(c, equeue.ConsumerOptions{Group: "g", ID: "c1", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		HeartbeatInterval: 200 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error {
			select {
			case handled <- struct{}{}:
			default:
			}
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, cons.Start(ctx))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("m")})
	require.NoError(t, err)
	<-handled // a handled message leaves a final commit to make

	proxy.Hang()
	cctx, cancel := context.WithCancel(ctx)
	closed := make(chan error, 1)
	go func() { closed <- cons.CloseContext(cctx) }()
	cancel()
	select {
	case err := <-closed:
		require.Error(t, err)
		assert.ErrorIs(t, err, context.Canceled, "the final commit and leave were not bounded by CloseContext's context")
	case <-time.After(30 * time.Second):
		t.Fatal("CloseContext did not return")
	}
	// Closed: a Close again returns nil.
	require.NoError(t, cons.Close())
	proxy.LetGo()
	require.NoError(t, p.Close())
}

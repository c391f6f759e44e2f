package remote_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/holdproxy"
	"github.com/equeue-go/equeue/remote"
)

// TestRemote_CloseOnASilentBrokerEndsEverything: a client's producer has
// SendAsync calls in flight (their contexts without deadline), a consumer
// and a PullConsumer long-poll, and a Request waits, when the connection
// goes silent (a black hole: no byte passes, nothing closes). Closing the
// consumers, the producer and the client returns, every future ends (as
// unknown, or not stored), and no goroutine is left (goleak, TestMain).
func TestRemote_CloseOnASilentBrokerEndsEverything(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
	s := startServer(t, e, "", nil)
	proxy := holdproxy.New(t, s.addr)
	c, err := remote.Dial(proxy.Addr(), nil)
	require.NoError(t, err)

	col := newCollector()
	cons, err := equeue.NewConsumer(c, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: col.handler("c"), PullWait: 5 * time.Second, HeartbeatInterval: 200 * time.Millisecond, ShutdownTimeout: time.Second})
	require.NoError(t, err)
	require.NoError(t, cons.Start(ctx))
	pc, err := equeue.NewPullConsumer(c, equeue.PullConsumerOptions{Group: "pg", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		HeartbeatInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	p, err := equeue.NewProducer(c, nil)
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("first")})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return col.has("first") }, "first handled")

	fetchDone := make(chan error, 1)
	go func() {
		q := pc.Assigned()
		if len(q) == 0 {
			fetchDone <- errors.New("nothing assigned")
			return
		}
		// Past what the queue holds, then a Fetch that waits.
		for {
			if _, err := pc.Fetch(context.Background(), q[0], 10, 10*time.Second); err != nil {
				fetchDone <- err
				return
			}
		}
	}()
	reqDone := make(chan error, 1)
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := p.Request(rctx, &equeue.Message{Topic: "rpc", Body: []byte("q")})
		reqDone <- err
	}()
	time.Sleep(50 * time.Millisecond)
	proxy.Hang()
	futures := make([]*equeue.SendFuture, 200)
	for i := range futures {
		futures[i] = p.SendAsync(context.Background(), &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m-%d", i)})
	}
	time.Sleep(50 * time.Millisecond)

	// The client first: the consumers' leaves then fail at once instead
	// of waiting for the silent broker.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = p.Close()
		_ = pc.Close()
		_ = cons.Close()
	}()
	require.NoError(t, c.Close())
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		t.Fatal("Close of the producer or a consumer did not return")
	}
	for i, f := range futures {
		select {
		case <-f.Done():
			_, err := f.Result(ctx)
			assert.Error(t, err, "send %d", i)
		case <-time.After(5 * time.Second):
			t.Fatalf("send %d never ended", i)
		}
	}
	for name, ch := range map[string]chan error{"fetch": fetchDone, "request": reqDone} {
		select {
		case err := <-ch:
			assert.Error(t, err, name)
		case <-time.After(15 * time.Second):
			t.Fatal("a Fetch or Request did not end")
		}
	}
	proxy.LetGo()
}

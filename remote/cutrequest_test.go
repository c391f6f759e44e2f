package remote_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// TestCutProxy_RequestOutcomesHoldAcrossCuts sends requests over a client
// whose connection is cut again and again at random bytes, either way,
// to a service consuming on the engine. A request answered is stored
// once; one that failed as not stored (ErrRequestNotStored, or an error
// that is neither a timeout nor unknown) is not stored; and once the
// cuts stop, requests are answered again: the reply reader survives them.
func TestCutProxy_RequestOutcomesHoldAcrossCuts(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "rpc", 2))
	replies := newProducer(t, e)
	svc, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "svc", Subscriptions: []equeue.Subscription{{Topic: "rpc"}},
		From: equeue.ConsumeFromEarliest,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			return equeue.Reply(ctx, replies, m, append([]byte("re:"), m.Body...), nil)
		}})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { _ = svc.Close() })

	s := startServer(t, e, "", nil)
	px := newCutProxy(t, s.addr)
	c := dial(t, px.Addr(), &remote.ClientOptions{MaxReconnectDelay: 50 * time.Millisecond})
	p := newProducer(t, c)

	tl := newTold()
	request := func(i int) error {
		body := fmt.Sprintf("r-%d", i)
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		rep, err := p.Request(rctx, &equeue.Message{Topic: "rpc", Body: []byte(body)})
		switch {
		case err == nil:
			assert.Equal(t, "re:"+body, string(rep.Body))
			tl.set(body, nil)
		case errors.Is(err, equeue.ErrRequestNotStored):
			tl.set(body, err)
		case errors.Is(err, equeue.ErrIndeterminate):
			tl.set(body, err)
		case errors.Is(err, equeue.ErrRequestTimeout):
			tl.set(body, nil) // neither unknown nor not stored: stored
		default:
			tl.set(body, err) // an error of the send before the context ended: not stored
		}
		return err
	}
	stop := make(chan struct{})
	var cutter sync.WaitGroup
	cutter.Go(func() { cutAgainAndAgain(px, 3000, 1000, stop) })
	for i := range 150 {
		_ = request(i)
	}
	close(stop)
	cutter.Wait()
	t.Logf("%d cuts", px.Cuts())
	// The connection the last cut broke may fail the first calls after
	// it (ErrUnavailable, not stored); then requests are answered again.
	i := 1000
	eventually(t, 30*time.Second, func() bool { i++; return request(i) == nil }, "a request answered once the cuts stopped")
	for range 5 {
		i++
		require.NoError(t, request(i), "a request once the cuts stopped")
	}
	tl.check(t, "requests", e, "rpc")
}

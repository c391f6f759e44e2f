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

// TestRemote_RequestReplyAcrossARestart sends requests over a client, many
// at once, to a replier consuming over another client, while the broker
// stops (at once, or gracefully) and serves again on the same address, on
// the same engine or on the engine closed and opened again on its
// directory. Each Request returns its own reply or an error that says
// what happened (a timeout, not stored, unknown, unavailable), never
// another request's reply; and the requester and the replier, neither
// restarted, answer requests again once the broker is back.
func TestRemote_RequestReplyAcrossARestart(t *testing.T) {
	for _, restart := range []string{"server", "engine"} {
		for _, stop := range []string{"stop", "graceful"} {
			t.Run(restart+"/"+stop, func(t *testing.T) { testRequestAcrossRestart(t, restart, stop) })
		}
	}
}

func testRequestAcrossRestart(t *testing.T, restart, stop string) {
	ctx := ctxT(t)
	sd := openServedDir(t)
	engine, s := sd.engine, sd.s
	copts := &remote.ClientOptions{MaxReconnectDelay: 100 * time.Millisecond}
	reqC, repC := dial(t, s.addr, copts), dial(t, s.addr, copts)
	require.NoError(t, reqC.CreateTopic(ctx, "rpc", 2))

	var hmu sync.Mutex
	handled := map[string]int{}
	rp := newProducer(t, repC)
	startConsumer(t, repC, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "rpc"}},
		From: equeue.ConsumeFromEarliest, Concurrency: 4,
		RetryTopicDelays: []time.Duration{20 * time.Millisecond}, SendBackRetryDelay: 50 * time.Millisecond,
		LocalRetryDelay: 50 * time.Millisecond,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			hmu.Lock()
			handled[string(m.Body)]++
			hmu.Unlock()
			return equeue.Reply(ctx, rp, m, append([]byte("re:"), m.Body...), nil)
		}})
	p := newProducer(t, reqC)

	ask := func(i int, within time.Duration) error {
		rctx, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		body := fmt.Sprintf("q-%d", i)
		rep, err := p.Request(rctx, &equeue.Message{Topic: "rpc", Body: []byte(body)})
		if err != nil {
			return err
		}
		if string(rep.Body) != "re:"+body {
			return fmt.Errorf("request %s answered %q", body, rep.Body)
		}
		return nil
	}
	require.NoError(t, ask(-1, 10*time.Second))

	var wg sync.WaitGroup
	errs := make([]error, 200)
	for i := range errs {
		wg.Go(func() {
			if i >= len(errs)/2 {
				time.Sleep(time.Duration(i%50) * time.Millisecond)
			}
			errs[i] = ask(i, 3*time.Second)
		})
	}
	time.Sleep(20 * time.Millisecond)
	sd.restartWith(stop == "graceful", restart == "engine")
	wg.Wait()
	ok := 0
	for i, err := range errs {
		if err == nil {
			ok++
			continue
		}
		assert.True(t, errors.Is(err, equeue.ErrRequestTimeout) || errors.Is(err, remote.ErrUnavailable) ||
			errors.Is(err, equeue.ErrIndeterminate) || errors.Is(err, equeue.ErrRequestNotStored),
			"request %d: %v", i, err)
	}
	t.Logf("%d of %d answered", ok, len(errs))
	kinds := map[string]int{}
	for _, err := range errs {
		if err != nil {
			kinds[fmt.Sprintf("%.120s", err.Error())]++
		}
	}
	for k, n := range kinds {
		t.Logf("%d x %s", n, k)
	}
	// Both sides carry on.
	eventually(t, 20*time.Second, func() bool { return ask(1000, 2*time.Second) == nil }, "a request answered after the restart")
	for i := range 20 {
		require.NoError(t, ask(2000+i, 10*time.Second))
	}
	// A request reported not stored is never handled.
	eventually(t, 20*time.Second, func() bool { return committedLag(t, engine(), "g") == 0 }, "every request handled")
	hmu.Lock()
	defer hmu.Unlock()
	for i, err := range errs {
		notStored := err != nil && !errors.Is(err, equeue.ErrIndeterminate) &&
			(!errors.Is(err, equeue.ErrRequestTimeout) || errors.Is(err, equeue.ErrRequestNotStored))
		if notStored {
			assert.Zero(t, handled[fmt.Sprintf("q-%d", i)], "request %d reported not stored (%v) was handled", i, err)
		}
	}
}

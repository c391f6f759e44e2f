package remote_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRemote_ServerStopMidStreamNoDuplicates: a broker stops cleanly
// (GracefulStop) while a remote consumer's handlers run, and serves again
// on the same address, the consumer never stopped. On the same engine
// ("server") the consumer keeps its grants: the commits it could not store
// while the broker was down are stored when it is back, and every message
// is handled exactly once. After the engine was closed and opened again on
// its data ("engine") the grants are gone: the consumer joins again and,
// as documented, carries on from the committed offsets, so a message
// handled after the last commit may be handled again, none committed
// before the stop is, and none is missing.
func TestRemote_ServerStopMidStreamNoDuplicates(t *testing.T) {
	for _, restart := range []string{"server", "engine"} {
		for _, kind := range []string{"clustering", "orderly", "broadcast"} {
			t.Run(restart+"/"+kind, func(t *testing.T) {
				testServerStopMidStream(t, restart, kind)
			})
		}
	}
}

func testServerStopMidStream(t *testing.T, restart, kind string) {
	const n = 200
	ctx := ctxT(t)
	dir := t.TempDir()
	e, err := equeue.Open(dir, &equeue.Options{Sync: equeue.SyncNever})
	require.NoError(t, err)
	var eMu sync.Mutex
	t.Cleanup(func() {
		eMu.Lock()
		defer eMu.Unlock()
		require.NoError(t, e.Close())
	})
	s := startServer(t, e, "", nil)
	addr := s.addr
	client := dial(t, addr, nil)
	require.NoError(t, client.CreateTopic(ctx, "t", 2))
	p := newProducer(t, client)
	for i := range n {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{fmt.Sprint("k", i%7)}, Body: fmt.Appendf(nil, "m-%d", i)})
		require.NoError(t, err)
	}

	var mu sync.Mutex
	handled := map[string]int{}
	at := map[string]equeue.QueueRef{} // where each message was
	offset := map[string]int64{}
	var runs atomic.Int64
	var holding atomic.Bool
	held, release := make(chan struct{}, 1), make(chan struct{})
	o := equeue.ConsumerOptions{Group: "g", ID: "m1", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, Concurrency: 4,
		Handler: func(_ context.Context, m *equeue.Message) error {
			if holding.Load() {
				select {
				case held <- struct{}{}:
				default:
				}
				<-release
			}
			time.Sleep(time.Millisecond)
			mu.Lock()
			handled[string(m.Body)]++
			at[string(m.Body)], offset[string(m.Body)] = equeue.QueueRef{Topic: m.Topic, Queue: m.Queue}, m.Offset
			mu.Unlock()
			runs.Add(1)
			return nil
		}}
	switch kind {
	case "orderly":
		o.Orderly = true
	case "broadcast":
		o.Model = equeue.Broadcasting
	}
	c := startConsumer(t, dial(t, addr, nil), o)
	eventually(t, 30*time.Second, func() bool { return runs.Load() >= n/3 }, "a third handled")
	holding.Store(true)
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("no handler running to stop under")
	}
	time.AfterFunc(20*time.Millisecond, func() { // let the stop begin, then the held handlers finish
		holding.Store(false)
		close(release)
	})
	s.srv.GracefulStop()
	s.stop()
	require.Less(t, runs.Load(), int64(n), "stopped mid-stream")
	committedAtStop := map[equeue.QueueRef]int64{}
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	for _, q := range gi.Queues {
		committedAtStop[q.QueueRef] = q.Committed
	}
	if restart == "engine" {
		eMu.Lock()
		require.NoError(t, e.Close())
		e, err = equeue.Open(dir, &equeue.Options{Sync: equeue.SyncNever})
		eMu.Unlock()
		require.NoError(t, err)
	}
	startServer(t, e, addr, nil)
	eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == n
	}, "every message handled")
	// After the engine's restart the consumer's grants are gone: what it
	// handled under them is committed only once it has joined again (and
	// handled again), so wait for the commits before closing.
	eventually(t, 30*time.Second, func() bool { return committedLag(t, e, "g") == 0 }, "everything committed")
	require.NoError(t, c.Close())
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		body := fmt.Sprintf("m-%d", i)
		if restart == "server" {
			assert.Equal(t, 1, handled[body], "%s handled %d times", body, handled[body])
		} else {
			// The consumer's grants went with the engine: what it handled
			// after its last commit is delivered again, nothing below it.
			assert.NotZero(t, handled[body], "%s never handled", body)
			if handled[body] > 1 {
				assert.GreaterOrEqual(t, offset[body], committedAtStop[at[body]], "%s, committed before the stop, handled again", body)
			}
		}
	}
}

// committedLag sums the lag of every queue of group.
func committedLag(t testing.TB, e *equeue.Engine, group string) int64 {
	gi, err := e.Group(context.Background(), group)
	require.NoError(t, err)
	var lag int64
	for _, q := range gi.Queues {
		lag += q.Lag
	}
	return lag
}

package remote_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// TestMultiProcess_ConsumerWithRetriesAcrossBrokerKills consumes, over a
// client, a backlog from a broker process whose handler fails the first
// attempt of every third message (sent back to the retry topic), while
// the broker is paused past its session timeout and woken, then killed
// (SIGKILL) and started again on its directory, twice. Every message is
// handled successfully in the end: none is skipped, neither one waiting
// in the retry topic nor one whose send-back was cut off.
func TestMultiProcess_ConsumerWithRetriesAcrossBrokerKills(t *testing.T) {
	needChildSignals(t)
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	const n = 3000
	for round := range nemesisRounds() {
		dir := t.TempDir()
		addr := freeAddr(t)
		env := []string{"EQUEUE_MP_ADDR=" + addr, "EQUEUE_MP_DIR=" + dir}
		broker := startChild(t, "broker", fmt.Sprintf("broker-%d", round), env...)
		c := dial(t, addr, &remote.ClientOptions{MaxReconnectDelay: 50 * time.Millisecond, PullAhead: 32})
		ctx := ctxT(t)
		p := newProducer(t, c)
		for i := 0; i < n; i += 100 {
			var batch []*equeue.Message
			for j := i; j < i+100; j++ {
				batch = append(batch, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m-%d", j)})
			}
			_, err := p.SendBatch(ctx, batch)
			require.NoError(t, err)
		}
		var (
			mu      sync.Mutex
			tries   = map[string]int{}
			handled = map[string]bool{}
		)
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(handled)
		}
		cons, err := equeue.NewConsumer(c, equeue.ConsumerOptions{Group: "g", ID: "c1",
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest,
			HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 20 * time.Millisecond,
			RetryTopicDelays: []time.Duration{10 * time.Millisecond}, LocalRetryDelay: 20 * time.Millisecond,
			SendBackRetryDelay: 20 * time.Millisecond, MaxAttempts: 1000,
			Handler: func(_ context.Context, m *equeue.Message) error {
				mu.Lock()
				defer mu.Unlock()
				b := string(m.Body)
				tries[b]++
				var i int
				_, _ = fmt.Sscanf(b, "m-%d", &i)
				if i%3 == 0 && tries[b] == 1 {
					return errors.New("first attempt fails")
				}
				handled[b] = true
				time.Sleep(50 * time.Microsecond)
				return nil
			}})
		require.NoError(t, err)
		require.NoError(t, cons.Start(ctx))
		eventually(t, 60*time.Second, func() bool { return count() > n/5 }, "handling begins")
		require.NoError(t, broker.cmd.Process.Signal(sigPause))
		time.Sleep(1500 * time.Millisecond) // past the session timeout
		require.NoError(t, broker.cmd.Process.Signal(sigResume))
		for k := range 2 {
			at := count()
			eventually(t, 60*time.Second, func() bool { return count() > at+n/5 }, "handling goes on")
			broker.stop(t, syscall.SIGKILL)
			broker = startChild(t, "broker", fmt.Sprintf("broker-%d-%d", round, k), env...)
		}
		eventually(t, 120*time.Second, func() bool { return count() == n }, "every message handled: %v of %d",
			func() any { return count() }, n)
		require.NoError(t, cons.Close())
		broker.stop(t, syscall.SIGTERM)
	}
}

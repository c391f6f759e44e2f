package remote_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// TestRemote_RetriesDelaysAndDeadLettersAcrossAServerRestart runs a remote
// consumer (clustering, orderly, broadcasting) whose handler fails some messages for good (dead
// letters after MaxAttempts), fails some once (a retry through the retry
// topic, or in place), asks a delay for some (RetryAfter) and handles the rest, while
// the broker stops cleanly (GracefulStop) and serves again on the same
// address, on the same engine or on the engine closed and opened again on
// its directory. Every message is handled successfully (at least once;
// exactly once when the engine kept running) or dead-lettered exactly
// once, never both, and the dead letters are the messages that always
// fail, each with at least MaxAttempts attempts: as many as the handler
// ran when the engine kept running. (A dead letter that cannot be stored
// while the broker is away is handled again locally, as LocalRetryDelay
// documents, so its attempts may pass MaxAttempts.)
func TestRemote_RetriesDelaysAndDeadLettersAcrossAServerRestart(t *testing.T) {
	for _, restart := range []string{"server", "engine"} {
		for _, kind := range []string{"clustering", "orderly", "broadcast"} {
			t.Run(restart+"/"+kind, func(t *testing.T) { testRetriesAcrossRestart(t, restart, kind) })
		}
	}
}

func testRetriesAcrossRestart(t *testing.T, restart, kind string) {
	const n, maxAttempts = 200, 3
	// Under CPU starvation (a -race run beside a busy test) an orderly
	// queue takes several times as long per message; the bounds below are
	// generous for that, and the test's own context outlasts them.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := newTimeline(t)
	sd := openServedDir(t)
	engine, s := sd.engine, sd.s
	client := dial(t, s.addr, &remote.ClientOptions{MaxReconnectDelay: 200 * time.Millisecond})
	require.NoError(t, client.CreateTopic(ctx, "t", 2))
	p := newProducer(t, client)
	for i := range n {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(strconv.Itoa(i))})
		require.NoError(t, err)
	}

	var mu sync.Mutex
	succeeded := map[int]int{}
	attempts := map[int][]int{}
	var done atomic.Int64
	o := equeue.ConsumerOptions{Group: "g", ID: "m1", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, Concurrency: 4, MaxAttempts: maxAttempts,
		RetryTopicDelays: []time.Duration{20 * time.Millisecond, 50 * time.Millisecond},
		LocalRetryDelay:  10 * time.Millisecond, SendBackRetryDelay: 50 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error {
			i, err := strconv.Atoi(string(m.Body))
			if err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			attempts[i] = append(attempts[i], m.Attempt)
			switch {
			case i%4 == 0:
				return fmt.Errorf("always fails: %d", i)
			case i%4 == 1 && m.Attempt == 0:
				return errors.New("fails once")
			case i%4 == 2 && m.Attempt == 0:
				return equeue.RetryAfter(30*time.Millisecond, errors.New("later"))
			}
			succeeded[i]++
			done.Add(1)
			return nil
		}}
	switch kind {
	case "orderly":
		o.Orderly = true
	case "broadcast":
		o.Model = equeue.Broadcasting
	}
	o.Logger = log.With("who", "consumer")
	c := startConsumer(t, dial(t, s.addr, &remote.ClientOptions{MaxReconnectDelay: 200 * time.Millisecond, Logger: log.With("who", "client")}), o)
	eventually(t, 2*time.Minute, func() bool { return done.Load() >= n/4 }, "a quarter handled: %d", func() any { return done.Load() })
	log.Info("test: restart", "handled", done.Load())
	sd.restartWith(true, restart == "engine")
	log.Info("test: restarted", "handled", done.Load())

	dead := func() map[int][]equeue.DLQEntry {
		entries, err := engine().ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: 1000})
		require.NoError(t, err)
		out := map[int][]equeue.DLQEntry{}
		for _, d := range entries {
			i, err := strconv.Atoi(string(d.Message.Body))
			require.NoError(t, err)
			out[i] = append(out[i], d)
		}
		return out
	}
	eventually(t, 2*time.Minute, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(succeeded) == n-n/4 && len(dead()) == n/4
	}, "every message handled or dead-lettered: %d handled, %d dead-lettered", func() any {
		mu.Lock()
		defer mu.Unlock()
		return len(succeeded)
	}, func() any { return len(dead()) })
	log.Info("test: all handled or dead-lettered")
	eventually(t, 2*time.Minute, func() bool { return committedLag(t, engine(), "g") == 0 }, "everything committed: lag %d",
		func() any { return committedLag(t, engine(), "g") })
	require.NoError(t, c.Close())

	mu.Lock()
	defer mu.Unlock()
	d := dead()
	for i := range n {
		if i%4 == 0 {
			if assert.Len(t, d[i], 1, "%d dead-lettered %d times (attempts %v)", i, len(d[i]), attempts[i]) {
				// A dead letter that could not be stored (the broker was
				// down) is handled again locally, as documented: its
				// attempts are then more than MaxAttempts, and they are
				// the handler's runs.
				assert.GreaterOrEqual(t, d[i][0].Attempts, maxAttempts, "%d's attempts (handled at attempts %v)", i, attempts[i])
				if restart != "engine" {
					assert.Equal(t, len(attempts[i]), d[i][0].Attempts, "%d's attempts (handled at attempts %v)", i, attempts[i])
				}
				assert.True(t, strings.HasPrefix(d[i][0].LastError, "always fails"), "%d's last error %q", i, d[i][0].LastError)
			}
			assert.Zero(t, succeeded[i], "%d succeeded", i)
			continue
		}
		assert.Empty(t, d[i], "%d dead-lettered (attempts %v)", i, attempts[i])
		if restart != "engine" {
			assert.Equal(t, 1, succeeded[i], "%d succeeded %d times (attempts %v)", i, succeeded[i], attempts[i])
		} else {
			assert.NotZero(t, succeeded[i], "%d never succeeded (attempts %v)", i, attempts[i])
		}
	}
}

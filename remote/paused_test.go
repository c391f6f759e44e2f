package remote_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/remote"
)

// TestMultiProcess_PausedConsumerAndBroker pauses processes instead of
// killing them. A consumer stopped (SIGSTOP) past the broker's session
// timeout loses its queues to the others; woken, it still holds messages
// it pulled and may commit as the owner it was: the broker must refuse
// those commits (it is no longer a member; a group's committed offsets,
// sampled every 50 ms, never go back), and the consumer must rejoin and
// take its share again. Then the broker itself is stopped
// for longer than a session: producers' sends time out meanwhile and are
// sent again, consumers' heartbeats and long-polls hang; woken, the broker
// serves on. Every acknowledged message must be handled, and the group
// must end with its three members.
func TestMultiProcess_PausedConsumerAndBroker(t *testing.T) {
	needChildSignals(t)
	if testing.Short() {
		t.Skip("starts five processes")
	}
	t.Parallel() // its children wait on each other, not on this process
	addr := freeAddr(t)
	broker := startChild(t, "broker", "broker", "EQUEUE_MP_ADDR="+addr, "EQUEUE_MP_DIR="+t.TempDir())
	var consumers []*mpChild
	for _, n := range []string{"c1", "c2", "c3"} {
		consumers = append(consumers, startChild(t, "consumer", n, "EQUEUE_MP_ADDR="+addr))
	}
	producer := startChild(t, "producer", "p1", "EQUEUE_MP_ADDR="+addr, "EQUEUE_MP_COUNT=4000")
	admin, err := remote.Dial(addr, nil)
	require.NoError(t, err)
	defer admin.Close()

	// Sample the group's committed offsets until the end.
	var (
		mu      sync.Mutex
		back    []string
		members []string
	)
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	var sampling sync.WaitGroup
	sampling.Go(func() {
		last := map[int]int64{}
		for sampleCtx.Err() == nil {
			ctx, cancel := context.WithTimeout(sampleCtx, time.Second)
			gi, err := admin.Group(ctx, "g")
			cancel()
			if err == nil {
				mu.Lock()
				members = members[:0]
				for _, m := range gi.Members {
					members = append(members, m.ID)
				}
				for _, q := range gi.Queues {
					if q.Topic != "t" || q.Committed < 0 {
						continue
					}
					if q.Committed < last[q.Queue] {
						back = append(back, fmt.Sprintf("queue %d: %d after %d", q.Queue, q.Committed, last[q.Queue]))
					}
					last[q.Queue] = max(last[q.Queue], q.Committed)
				}
				mu.Unlock()
			}
			select {
			case <-sampleCtx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	memberIDs := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(members, ",")
	}
	handledBy := func(c *mpChild) int { return len(c.ids("HANDLED")) }

	time.Sleep(300 * time.Millisecond)
	c1 := consumers[0]
	require.NoError(t, c1.cmd.Process.Signal(sigPause))
	eventually(t, 30*time.Second, func() bool { return memberIDs() == "c2,c3" }, "the paused consumer's session expires")
	time.Sleep(300 * time.Millisecond) // the others take its queues and commit there
	before := handledBy(c1)
	require.NoError(t, c1.cmd.Process.Signal(sigResume))
	eventually(t, 30*time.Second, func() bool { return memberIDs() == "c1,c2,c3" }, "the woken consumer rejoins")
	eventually(t, 30*time.Second, func() bool { return handledBy(c1) > before }, "the woken consumer handles messages again")

	require.NoError(t, broker.cmd.Process.Signal(sigPause))
	paused := time.Now()
	time.Sleep(2500 * time.Millisecond) // past the 1 s session timeout and the producer's 2 s send timeout
	require.NoError(t, broker.cmd.Process.Signal(sigResume))
	finishAfter(t, producer, paused, mpSendsAfter)
	waitProducer(t, producer, "pause", paused, 60*time.Second)
	acked := map[string]bool{}
	for _, id := range ackedInOrder(t, producer) {
		acked[id] = true
	}
	waitHandled(t, acked, consumers)
	eventually(t, 30*time.Second, func() bool { return memberIDs() == "c1,c2,c3" }, "the group ends with its three members")
	stopSampling()
	sampling.Wait()
	assert.Empty(t, back, "committed offsets that went back")
	for _, l := range c1.ids("LOG") {
		t.Logf("c1: %s", l) // its stale commit refused: not a member any more
	}

	for _, c := range consumers {
		c.stop(t, syscall.SIGTERM)
		assert.Equal(t, 0, c.cmd.ProcessState.ExitCode(), "%s exits cleanly", c.name)
	}
	broker.stop(t, syscall.SIGTERM)
	assert.Equal(t, 0, broker.cmd.ProcessState.ExitCode())
}

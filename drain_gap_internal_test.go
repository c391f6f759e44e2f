package equeue

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcessQueue_AStaleTaskDoesNotBeginADrainsGap: once a drain has
// handed a message out as a gap, a worker's task for it pulled before the
// drain (queued in the pool, or held in a worker's run) is stale: the
// message begins once for the hand-out, and again only for the local
// retry of a failure (takeRetry), once per failure.
func TestProcessQueue_AStaleTaskDoesNotBeginADrainsGap(t *testing.T) {
	p := pqWith(0, 1, 2)
	require.True(t, p.begin(1)) // a worker runs 1; 0 waits in another's run
	p.stopAfterGaps()
	gaps, running := p.gaps()
	require.Equal(t, []int64{0}, offsetsOf(gaps))
	require.True(t, running)

	require.True(t, p.begin(0), "the drain's gap run (or the stale task, whichever comes first)")
	require.False(t, p.begin(0), "running")
	retry := p.awaitRetry(0, 1) // it failed: a local retry is announced
	p.end(0, false)
	require.False(t, p.begin(0), "the stale task: the failure's run is over, its retry is not due")

	require.True(t, p.takeRetry(0, retry))
	require.True(t, p.begin(0), "the local retry runs it")
	p.end(0, false) // failed again, its retry not announced (a drain that gave up)
	require.False(t, p.begin(0), "nothing more to run")
	p.end(1, true)
	off, _ := p.committableState()
	require.Equal(t, int64(0), off, "0 stays for the next owner")
}

// TestConsumer_ADrainsFailedGapRunsOnce: Close drains a queue whose
// message 1 waits, unbegun, in a worker's run behind the blocked handler
// of 0 while 2 runs: the drain runs 1 itself, as a gap, and it fails (a
// broadcasting member retries it locally, later). The worker, once 0
// returns, must not run 1 again for that one failure.
func TestConsumer_ADrainsFailedGapRunsOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	msgs := make([]*Message, 4)
	for i := range msgs {
		msgs[i] = &Message{Body: []byte{byte(i)}}
	}
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Queue: 0, Messages: msgs})
	require.NoError(t, err)

	var calls [4]atomic.Int64
	started := [4]chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})}
	release0, release2 := make(chan struct{}), make(chan struct{})
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Model: Broadcasting, Subscriptions: []Subscription{{Topic: "t"}},
		Concurrency: 2, CommitInterval: time.Hour, ShutdownTimeout: time.Minute, LocalRetryDelay: time.Hour,
		Handler: func(ctx context.Context, m *Message) error {
			if calls[m.Offset].Add(1) == 1 {
				close(started[m.Offset])
			}
			switch m.Offset {
			case 0:
				<-release0
			case 1:
				return errors.New("failed")
			case 2:
				<-release2
			}
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	// One pull of 0..3: the first worker takes the run 0, 1 and blocks in
	// 0; the second takes 2 and blocks in it; 3 waits in the pool.
	<-started[0]
	<-started[2]
	c.mu.Lock()
	var r *runner
	for _, x := range c.runners {
		r = x
	}
	c.mu.Unlock()
	require.NotNil(t, r)
	require.Zero(t, calls[1].Load(), "1 waits behind 0")

	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-started[1]: // the drain runs 1 as a gap: it is below 2
	case <-ctx.Done():
		t.Fatal("the drain did not run the gap")
	}
	waitFor(t, func() bool { return r.pq.runningCount() == 2 }, "the gap's run failed and ended")
	close(release0)
	// The worker of 0 goes on with its run (1) and the pool (3) and parks
	// or exits: only the worker blocked in 2 is busy.
	waitFor(t, func() bool {
		c.pool.mu.Lock()
		defer c.pool.mu.Unlock()
		return c.pool.tasks.len() == 0 && c.pool.running-len(c.pool.idle) == 1
	}, "the worker of 0 is done with its tasks")
	close(release2)
	require.NoError(t, <-closed)
	assert.Equal(t, int64(1), calls[1].Load(), "one failure, one run")
	assert.Zero(t, calls[3].Load(), "3 was above the drain's fence")
}

// TestProcessQueue_ADrainEndsWithTheQueueStopped: a drain returns only in
// the same step that finds no handler running and stops the queue, so a
// local retry due after the drain returned (its message left uncommitted
// for the next owner) never begins: it would run a handler after the
// queue was committed and released, and its failure store a retry copy of
// a message the next owner delivers again.
func TestProcessQueue_ADrainEndsWithTheQueueStopped(t *testing.T) {
	p := pqWith(0, 1)
	require.True(t, p.begin(1))
	p.stopAfterGaps()
	gaps, _ := p.gaps()
	require.Equal(t, []int64{0}, offsetsOf(gaps))
	require.True(t, p.begin(0), "the drain's gap run")
	retry := p.awaitRetry(0, 1) // it fails: a local retry is announced, due later
	p.end(0, false)
	assert.False(t, p.stopIfIdle(), "1 still runs: the drain goes on waiting")
	p.end(1, true)
	require.True(t, p.stopIfIdle(), "nothing runs: the drain ends here")
	require.True(t, p.takeRetry(0, retry), "the retry's task comes due")
	assert.False(t, p.begin(0), "but the queue was released: it does not begin")
	off, _ := p.committableState()
	assert.Equal(t, int64(0), off, "0 stays for the next owner")
}

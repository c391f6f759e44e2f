package main

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
)

// Delivery is at least once: a job delivered again (to another worker after
// a rebalance, or after a failed attempt) is counted once, not a panic, and
// the wait ends once every job was handled.
func TestWorkqueue_RedeliveredJobCountsOnce(t *testing.T) {
	ctx := context.Background()
	prog := newProgress(2)
	a := &equeue.Message{ID: "a", Topic: "jobs", Queue: 0, Offset: 0}
	b := &equeue.Message{ID: "b", Topic: "jobs", Queue: 1, Offset: 0}
	require.NotPanics(t, func() {
		require.NoError(t, prog.worker("worker-1")(ctx, a))
		require.NoError(t, prog.worker("worker-2")(ctx, b))
		require.NoError(t, prog.worker("worker-2")(ctx, a)) // a again
	})
	require.NoError(t, prog.wait(time.Minute))
	assert.Equal(t, map[string]int{"worker-1": 1, "worker-2": 2}, prog.perWorker(), "each delivery is work done by its worker")
}

// A job delivered twice before another was handled at all does not end
// the wait early: the jobs are counted, not the deliveries.
func TestWorkqueue_RepeatDoesNotStandInForAMissingJob(t *testing.T) {
	ctx := context.Background()
	prog := newProgress(2)
	a := &equeue.Message{ID: "a", Topic: "jobs", Queue: 0, Offset: 0}
	require.NoError(t, prog.worker("worker-1")(ctx, a))
	require.NoError(t, prog.worker("worker-2")(ctx, a))
	err := prog.wait(10 * time.Millisecond)
	require.ErrorIs(t, err, errGaveUp)
	assert.Contains(t, err.Error(), "1 of 2 jobs")
}

// A job that never comes (lost, or failing until it is dead-lettered)
// makes the run give up with an error after its time limit instead of
// waiting for ever.
func TestWorkqueue_WaitGivesUp(t *testing.T) {
	prog := newProgress(1)
	err := prog.wait(10 * time.Millisecond)
	require.ErrorIs(t, err, errGaveUp)
	assert.Contains(t, err.Error(), "0 of 1 jobs")
}

// Through the engine: a worker fails once on one job, which comes back
// through the group's retry topic and is handled again. The repeat is not
// a failed (panicking) handler, and the wait ends with every job handled.
func TestWorkqueue_RetriedJobThroughTheEngine(t *testing.T) {
	ctx := context.Background()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, eng.Close()) }()
	require.NoError(t, eng.CreateTopic(ctx, "jobs", 2))

	const jobs = 3
	prog := newProgress(jobs)
	work := prog.worker("worker-1")
	var (
		mu      sync.Mutex
		failed  bool
		results []error
	)
	retried := make(chan struct{})
	c, err := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:            "resizers",
		ID:               "worker-1",
		Subscriptions:    []equeue.Subscription{{Topic: "jobs"}},
		RetryTopicDelays: []time.Duration{time.Millisecond},
		Handler: func(ctx context.Context, m *equeue.Message) error {
			if err := work(ctx, m); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if !failed && string(m.Body) == "job-0" {
				failed = true
				return errors.New("fails once")
			}
			return nil
		},
		Hooks: []equeue.Hooks{{AfterHandle: func(_ context.Context, m *equeue.Message, err error, _ time.Duration) {
			mu.Lock()
			results = append(results, err)
			mu.Unlock()
			if string(m.Body) == "job-0" && m.Attempt == 1 {
				close(retried)
			}
		}}},
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	p, err := equeue.NewProducer(eng, nil)
	require.NoError(t, err)
	for i := range jobs {
		_, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Body: fmt.Appendf(nil, "job-%d", i)})
		require.NoError(t, err)
	}
	require.NoError(t, p.Close())

	waitErr := prog.wait(time.Minute)
	select {
	case <-retried:
	case <-time.After(time.Minute):
		t.Fatal("the failed job was not delivered again")
	}
	require.NoError(t, c.Close()) // waits for running handlers
	require.NoError(t, waitErr)
	mu.Lock()
	defer mu.Unlock()
	for _, err := range results {
		assert.NotErrorIs(t, err, equeue.ErrHandlerPanic)
	}
	assert.Len(t, results, jobs+1, "every job once, and the failed one again")
	assert.Equal(t, map[string]int{"worker-1": jobs + 1}, prog.perWorker())
}

package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// workerStressRoundsEnv sets how many random rounds TestWorkerPool_Stress
// runs (a soak). Without it, the test runs one round of each scenario.
const workerStressRoundsEnv = "EQUEUE_WORKER_STRESS_ROUNDS"

// workerStressSeedEnv replays one round: the seed a failure printed.
const workerStressSeedEnv = "EQUEUE_WORKER_STRESS_SEED"

// stressScenario is what a round of TestWorkerPool_Stress does besides
// consuming.
type stressScenario int

const (
	// stressClean: no failure, no stop before the end; every message is
	// handled exactly once.
	stressClean stressScenario = iota
	// stressFailures: some messages fail their first run and are retried
	// (through the retry topic, or locally in a broadcasting group).
	stressFailures
	// stressClose: a second member joins (a rebalance) and the first one
	// closes in the middle, with handlers running and stuck; the second
	// one handles the rest.
	stressClose
	stressScenarios
)

func (s stressScenario) String() string {
	return [...]string{"clean", "failures", "close"}[s]
}

// TestWorkerPool_Stress runs random rounds of a concurrent consumer on an
// in-process engine: several queues, Concurrency 1 to 8, Handler or
// BatchHandler, handlers taking random short times, some stuck until
// released (fewer than Concurrency at once), some failing once. While
// handlers are stuck every other message is handled (a stuck handler holds
// up only its own messages); in the end every message is handled
// successfully at least once, exactly once without stops, and no handler
// starts on a member after its Close returned.
func TestWorkerPool_Stress(t *testing.T) {
	rounds := int(stressScenarios)
	if s := os.Getenv(workerStressRoundsEnv); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, workerStressRoundsEnv)
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(workerStressSeedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, workerStressSeedEnv)
		seed, rounds = n, 1
	}
	for i := range rounds {
		seed := seed + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runWorkerStress(t, seed)
		})
	}
}

// workerStress is one round's plan and ledger.
type workerStress struct {
	stuck   map[string]bool // stuck on their first run until release closes
	fail    map[string]bool // fail their first run
	release chan struct{}

	mu       sync.Mutex
	runs     map[string]int // handler runs per body
	ok       map[string]int // successful runs per body
	stuckNow int            // messages in stuck handler calls now
	late     []string       // started on a member after its Close returned
}

func runWorkerStress(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	scenario := stressScenario(seed % uint64(stressScenarios))
	if os.Getenv(workerStressRoundsEnv) != "" || os.Getenv(workerStressSeedEnv) != "" {
		scenario = stressScenario(rng.IntN(int(stressScenarios)))
	}
	queues := 1 + rng.IntN(4)
	concurrency := 1 + rng.IntN(8)
	batchSize := 0
	if rng.IntN(3) == 0 {
		batchSize = 1 + rng.IntN(4)
	}
	pullBatch := max(batchSize, 1+rng.IntN(32))
	model := equeue.Clustering
	if scenario == stressFailures && rng.IntN(2) == 0 {
		model = equeue.Broadcasting // local retries
	}
	perQueue := 50 + rng.IntN(150)
	t.Logf("scenario=%v queues=%d concurrency=%d batch=%d pullBatch=%d model=%v perQueue=%d",
		scenario, queues, concurrency, batchSize, pullBatch, model, perQueue)

	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", queues))

	s := &workerStress{stuck: map[string]bool{}, fail: map[string]bool{}, release: make(chan struct{}),
		runs: map[string]int{}, ok: map[string]int{}}
	released := false
	defer func() {
		if !released {
			close(s.release)
		}
	}()
	var bodies [][]string // per queue
	for q := range queues {
		var qb []string
		for i := range perQueue {
			qb = append(qb, fmt.Sprintf("q%d-%d", q, i))
		}
		bodies = append(bodies, qb)
	}
	all := func(f func(string)) {
		for _, qb := range bodies {
			for _, b := range qb {
				f(b)
			}
		}
	}
	// Fewer stuck messages than workers: each holds up one worker at most.
	for range rng.IntN(concurrency) {
		s.stuck[bodies[rng.IntN(queues)][rng.IntN(perQueue)]] = true
	}
	if scenario != stressClean {
		for range rng.IntN(perQueue * queues / 4) {
			if b := bodies[rng.IntN(queues)][rng.IntN(perQueue)]; !s.stuck[b] {
				s.fail[b] = true
			}
		}
	}
	total := queues * perQueue

	member := func(id string) (*equeue.Consumer, *atomic.Bool) {
		closed := &atomic.Bool{}
		o := equeue.ConsumerOptions{Group: "g", ID: id, Model: model, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			Concurrency: concurrency, PullBatch: pullBatch, RetryTopicDelays: []time.Duration{time.Millisecond},
			LocalRetryDelay: time.Millisecond, MaxAttempts: 100, CommitInterval: 20 * time.Millisecond,
			ShutdownTimeout: 200 * time.Millisecond, HandoffTimeout: 200 * time.Millisecond}
		if batchSize > 0 {
			o.BatchSize = batchSize
			o.BatchHandler = func(ctx context.Context, msgs []*equeue.Message) error {
				errs := s.handle(ctx, closed, msgs)
				be := &equeue.BatchError{Failed: map[int]error{}}
				for i, err := range errs {
					if err != nil {
						be.Failed[i] = err
					}
				}
				if len(be.Failed) == 0 {
					return nil
				}
				return be
			}
		} else {
			o.Handler = func(ctx context.Context, m *equeue.Message) error {
				return s.handle(ctx, closed, []*equeue.Message{m})[0]
			}
		}
		c, err := equeue.NewConsumer(e, o)
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		return c, closed
	}
	closeMember := func(c *equeue.Consumer, closed *atomic.Bool) {
		require.NoError(t, c.Close())
		closed.Store(true)
	}

	// Part of the messages is there before the first member starts; the
	// rest comes in random runs while it consumes.
	send := func(from, to int) error {
		for q, qb := range bodies {
			for i := from; i < to; {
				n := min(to-i, 1+rng.IntN(40))
				msgs := make([]*equeue.Message, n)
				for k := range msgs {
					msgs[k] = &equeue.Message{Body: []byte(qb[i+k])}
				}
				if _, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: msgs}); err != nil {
					return err
				}
				i += n
			}
		}
		return nil
	}
	first := rng.IntN(perQueue + 1)
	require.NoError(t, send(0, first))
	a, aClosed := member("a")
	sent := make(chan error, 1)
	go func() { sent <- send(first, perQueue) }()
	// handled counts the messages handled successfully, and those in
	// stuck handler calls now.
	handled := func() (done, stuck int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, n := range s.ok {
			if n > 0 {
				done++
			}
		}
		return done, s.stuckNow
	}
	require.NoError(t, <-sent)

	var b *equeue.Consumer
	var bClosed *atomic.Bool
	if scenario == stressClose {
		eventually(t, 30*time.Second, func() bool { d, _ := handled(); return d >= total/4 }, "a quarter handled")
		b, bClosed = member("b") // a rebalance
		eventually(t, 30*time.Second, func() bool { d, _ := handled(); return d >= total/2 }, "half handled")
		closeMember(a, aClosed)
		released = true
		close(s.release)
		eventually(t, time.Minute, func() bool { d, _ := handled(); return d == total }, "b handles the rest")
		closeMember(b, bClosed)
	} else {
		eventually(t, time.Minute, func() bool { d, st := handled(); return d+st == total },
			"every message but those in stuck handlers handled while they are stuck")
		released = true
		close(s.release)
		eventually(t, time.Minute, func() bool { d, _ := handled(); return d == total }, "the stuck ones too once released")
		closeMember(a, aClosed)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Empty(t, s.late, "handler started on a member after its Close returned")
	all(func(body string) {
		if scenario == stressClose {
			assert.GreaterOrEqual(t, s.ok[body], 1, "%s handled", body)
		} else {
			assert.Equal(t, 1, s.ok[body], "%s handled successfully once", body)
		}
		if s.fail[body] {
			assert.GreaterOrEqual(t, s.runs[body], 2, "%s failed once and was retried", body)
		}
	})
}

// handle is a handler call on msgs by a member (closed is set once its
// Close returned): it returns each message's result.
func (s *workerStress) handle(ctx context.Context, closed *atomic.Bool, msgs []*equeue.Message) []error {
	errs := make([]error, len(msgs))
	stick := false
	s.mu.Lock()
	for _, m := range msgs {
		body := string(m.Body)
		if closed.Load() {
			s.late = append(s.late, body)
		}
		s.runs[body]++
		if s.stuck[body] && s.runs[body] == 1 {
			stick = true
		}
	}
	if stick {
		s.stuckNow += len(msgs)
	}
	s.mu.Unlock()
	var stopped error
	if stick {
		select {
		case <-s.release:
		case <-ctx.Done():
			stopped = ctx.Err()
		}
		s.mu.Lock()
		s.stuckNow -= len(msgs)
		s.mu.Unlock()
	} else if d := rand.IntN(4); d > 0 {
		time.Sleep(time.Duration(d) * 100 * time.Microsecond) // work
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range msgs {
		body := string(m.Body)
		switch {
		case stopped != nil:
			errs[i] = stopped
		case s.fail[body] && s.runs[body] == 1:
			errs[i] = errors.New("fails its first run")
		default:
			s.ok[body]++
		}
	}
	return errs
}

package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// groupModelRoundsEnv sets how many random histories each case of
// TestModel_RandomGroupLife runs (a soak). Without it, the test runs one
// history per transport, of a consumer mode its seed picks.
const groupModelRoundsEnv = "EQUEUE_GROUP_MODEL_ROUNDS"

// groupModelSeedEnv replays one history: the seed a failure printed.
const groupModelSeedEnv = "EQUEUE_GROUP_MODEL_SEED"

// TestModel_RandomGroupLife runs random histories of one clustering group
// and checks the delivery promises at the end of each: members start and
// stop cleanly, the engine is closed and reopened, messages are sent
// between and during all of it, and some of them fail once or always.
// Whatever the history, every message that does not always fail is handled
// successfully exactly once (no loss; no duplicate, as every stop was
// clean), each failure is retried as many times as MaxAttempts allows, and
// every message that always fails is in the dead-letter topic exactly once
// after MaxAttempts failed attempts. Orderly groups also keep each key's
// order. Histories with crashed members (stopped as a killed process
// would be) check the at-least-once promise instead: every message is
// handled successfully at least once, or dead-lettered at least once
// after at least MaxAttempts failed attempts.
func TestModel_RandomGroupLife(t *testing.T) {
	rounds, soak := 1, false
	if v := os.Getenv(groupModelRoundsEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, groupModelRoundsEnv)
		rounds, soak = n, true
	}
	var fixedSeed uint64
	if v := os.Getenv(groupModelSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, groupModelSeedEnv)
		fixedSeed, rounds, soak = n, 1, true
	}
	for _, tr := range transports {
		for i, mode := range []string{"concurrent", "orderly", "batch"} {
			for round := 0; round < rounds; round++ {
				seed := fixedSeed
				if seed == 0 {
					seed = uint64(time.Now().UnixNano())
				}
				if !soak && seed%3 != uint64(i) {
					continue // the default run tries one mode per transport
				}
				t.Run(fmt.Sprintf("%s/%s/seed=%d", tr, mode, seed), func(t *testing.T) {
					clusterSuiteOnly(t, tr)
					runGroupLife(t, tr, mode, seed)
				})
			}
		}
	}
}

// groupLifeAttempts is the MaxAttempts of the model's group.
const groupLifeAttempts = 3

// groupLifeFate is how message n behaves: it fails always, once, or never.
func groupLifeFate(n int) (alwaysFails, failsOnce bool) {
	return n%7 == 3, n%4 == 1
}

// groupLifeLog records what the group's handlers saw, by message number.
type groupLifeLog struct {
	mu        sync.Mutex
	successes map[int]int
	failures  map[int]int
	byKey     map[string][]int // orderly: first successes per key, in order
}

func (l *groupLifeLog) handler(ctx context.Context, m *equeue.Message) error {
	n, err := strconv.Atoi(string(m.Body))
	if err != nil {
		return fmt.Errorf("unexpected body %q", m.Body)
	}
	// Some work takes a little while, so that stops and handovers find
	// handlers running.
	time.Sleep(time.Duration(n%3) * time.Millisecond)
	always, once := groupLifeFate(n)
	l.mu.Lock()
	defer l.mu.Unlock()
	if always || (once && l.failures[n] == 0) {
		l.failures[n]++
		return fmt.Errorf("message %d fails", n)
	}
	l.successes[n]++
	if l.successes[n] == 1 && len(m.Keys) > 0 {
		l.byKey[m.Keys[0]] = append(l.byKey[m.Keys[0]], n)
	}
	return nil
}

// batchHandler handles a batch message by message, failing those that
// handler fails.
func (l *groupLifeLog) batchHandler(ctx context.Context, msgs []*equeue.Message) error {
	failed := map[int]error{}
	for i, m := range msgs {
		if err := l.handler(ctx, m); err != nil {
			failed[i] = err
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return &equeue.BatchError{Failed: failed}
}

// settled reports whether every message below sent has had its fate.
func (l *groupLifeLog) settled(sent int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for n := 0; n < sent; n++ {
		if always, _ := groupLifeFate(n); always {
			if l.failures[n] < groupLifeAttempts {
				return false
			}
		} else if l.successes[n] == 0 {
			return false
		}
	}
	return true
}

func runGroupLife(t *testing.T, transport, mode string, seed uint64) {
	orderly := mode == "orderly"
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ctx := ctxT(t)
	e, b, restart := openOverRestartable(t, transport, &equeue.Options{SessionTimeout: time.Second})
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	log := &groupLifeLog{successes: map[int]int{}, failures: map[int]int{}, byKey: map[string][]int{}}
	opts := func(id string) equeue.ConsumerOptions {
		o := equeue.ConsumerOptions{
			Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			Handler: log.handler, Orderly: orderly, Concurrency: 4,
			MaxAttempts: groupLifeAttempts, RetryTopicDelays: []time.Duration{20 * time.Millisecond},
			LocalRetryDelay: 10 * time.Millisecond, CommitInterval: 30 * time.Millisecond,
		}
		if mode == "batch" {
			o.Handler, o.BatchHandler, o.BatchSize = nil, log.batchHandler, 4
		}
		return o
	}
	p, err := equeue.NewProducer(b, nil)
	require.NoError(t, err)
	members := map[string]*equeue.Consumer{}
	// A crashed member's ID stays taken until its session expires: its
	// slot starts again under a new incarnation's ID.
	incarnation := map[string]int{}
	start := func(id string) {
		c, err := equeue.NewConsumer(b, withHeartbeat(opts(fmt.Sprintf("%s.%d", id, incarnation[id]))))
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx), "start %s", id)
		members[id] = c
	}
	crashed := false
	stop := func(id string) {
		require.NoError(t, members[id].Close(), "close %s", id)
		delete(members, id)
	}
	defer func() {
		for id := range members {
			stop(id)
		}
		_ = p.Close()
	}()
	sent := 0
	send := func(k int, delay time.Duration) {
		for i := 0; i < k; i++ {
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"k" + strconv.Itoa(sent%5)}, Body: []byte(strconv.Itoa(sent)), Delay: delay})
			require.NoError(t, err, "send %d", sent)
			sent++
		}
	}
	queues := 4
	settle := func() {
		if len(members) == 0 {
			start("c0")
		}
		eventually(t, 30*time.Second, func() bool { return log.settled(sent) }, "seed %d: %d messages not all handled", seed, sent)
	}
	ids := []string{"c0", "c1", "c2"}
	steps := 12 + rng.IntN(12)
	var history []string
	for step := 0; step < steps; step++ {
		id := ids[rng.IntN(len(ids))]
		switch op := rng.IntN(12); {
		case op < 4:
			k := 1 + rng.IntN(20)
			history = append(history, fmt.Sprintf("send %d", k))
			send(k, 0)
		case op < 5 && !orderly:
			// Delayed messages interleave with the others, so a key's order
			// is the orderly model's to keep only among undelayed ones.
			k, d := 1+rng.IntN(5), time.Duration(1+rng.IntN(50))*time.Millisecond
			history = append(history, fmt.Sprintf("send %d delayed %v", k, d))
			send(k, d)
		case op < 6 && !orderly && queues < 8:
			// More queues move keys to other queues (README: a key keeps
			// its order while the queue count stays).
			queues++
			history = append(history, fmt.Sprintf("queues %d", queues))
			require.NoError(t, e.AddQueues(ctx, "t", 1))
		case op < 7 && len(members) > 0 && rng.IntN(3) == 0:
			for id := range members {
				history = append(history, "crash "+id)
				equeue.CrashConsumer(members[id])
				delete(members, id)
				incarnation[id]++
				crashed = true
				break
			}
		case op < 8:
			if _, on := members[id]; on {
				history = append(history, "stop "+id)
				stop(id)
			} else {
				history = append(history, "start "+id)
				start(id)
			}
		case op < 9:
			history = append(history, "reopen")
			running := make([]string, 0, len(members))
			for id := range members {
				running = append(running, id)
				stop(id)
			}
			require.NoError(t, p.Close())
			e, b = restart()
			p, err = equeue.NewProducer(b, nil)
			require.NoError(t, err)
			for _, id := range running {
				start(id)
			}
		case op < 10:
			history = append(history, "settle")
			settle()
		default:
			d := time.Duration(rng.IntN(30)) * time.Millisecond
			history = append(history, "wait "+d.String())
			time.Sleep(d)
		}
	}
	settle()
	t.Logf("seed %d: %d messages, history %v", seed, sent, history)
	dying := 0
	for n := 0; n < sent; n++ {
		if always, _ := groupLifeFate(n); always {
			dying++
		}
	}
	eventually(t, 30*time.Second, func() bool {
		total := 0
		for _, c := range deadLetterCounts(t, e, "g") {
			total += c
		}
		return total >= dying
	}, "seed %d: %d dead letters expected", seed, dying)
	// Let a late duplicate or an extra retry show up before checking.
	time.Sleep(100 * time.Millisecond)
	dead := deadLetterCounts(t, e, "g")
	log.mu.Lock()
	defer log.mu.Unlock()
	for n := 0; n < sent; n++ {
		always, once := groupLifeFate(n)
		switch {
		case crashed && always:
			require.Equal(t, 0, log.successes[n], "seed %d: message %d always fails", seed, n)
			require.GreaterOrEqual(t, log.failures[n], groupLifeAttempts, "seed %d: attempts of message %d", seed, n)
			require.GreaterOrEqual(t, dead[n], 1, "seed %d: dead letters of message %d", seed, n)
		case crashed:
			require.GreaterOrEqual(t, log.successes[n], 1, "seed %d: successes of message %d", seed, n)
		case always:
			require.Equal(t, 0, log.successes[n], "seed %d: message %d always fails", seed, n)
			require.Equal(t, groupLifeAttempts, log.failures[n], "seed %d: attempts of message %d", seed, n)
			require.Equal(t, 1, dead[n], "seed %d: dead letters of message %d", seed, n)
		default:
			require.Equal(t, 1, log.successes[n], "seed %d: successes of message %d", seed, n)
			wantFailures := 0
			if once {
				wantFailures = 1
			}
			require.Equal(t, wantFailures, log.failures[n], "seed %d: failures of message %d", seed, n)
			require.Zero(t, dead[n], "seed %d: message %d dead-lettered", seed, n)
		}
	}
	if orderly && !crashed {
		for key, got := range log.byKey {
			require.IsIncreasing(t, got, "seed %d: order of key %s", seed, key)
		}
	}
}

// withHeartbeat shortens the member's heartbeat as startConsumer does.
func withHeartbeat(o equeue.ConsumerOptions) equeue.ConsumerOptions {
	o.HeartbeatInterval = 200 * time.Millisecond
	return o
}

// deadLetterCounts counts group's dead letters by message number.
func deadLetterCounts(t *testing.T, e *equeue.Engine, group string) map[int]int {
	t.Helper()
	out := map[int]int{}
	for from := int64(0); ; {
		page, err := e.ListDeadLetters(context.Background(), group, equeue.ListDeadLettersRequest{From: from, Max: 1024})
		if errors.Is(err, equeue.ErrTopicNotFound) {
			return out
		}
		require.NoError(t, err)
		if len(page) == 0 {
			return out
		}
		for _, d := range page {
			n, err := strconv.Atoi(string(d.Message.Body))
			require.NoError(t, err)
			out[n]++
			from = d.Offset + 1
		}
	}
}

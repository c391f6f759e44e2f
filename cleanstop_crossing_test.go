package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
)

// cleanStopCrossingRoundsEnv sets how many generations of members
// TestConsumer_CleanStopCrossingNoDuplicates runs before its final drain
// (a soak): each generation starts three members, stops them cleanly one
// by one under load and closes and reopens the engine. Without it, one.
const cleanStopCrossingRoundsEnv = "EQUEUE_CLEANSTOP_CROSSING_ROUNDS"

// crossingMaxAttempts is the MaxAttempts of the crossing test's members.
const crossingMaxAttempts = 3

// crossingKind is what the crossing test's handler does with message i.
type crossingKind int

const (
	crossingOK          crossingKind = iota // succeeds at once
	crossingFailOnce                        // fails its first attempt
	crossingRetryAfter                      // asks RetryAfter twice, then succeeds
	crossingAlwaysFails                     // dead-lettered after MaxAttempts
	crossingDeadLetter                      // asks for the dead letters at once
)

func crossingKindOf(i int) crossingKind {
	switch i % 10 {
	case 3:
		return crossingFailOnce
	case 5:
		return crossingRetryAfter
	case 7:
		return crossingAlwaysFails
	case 9:
		return crossingDeadLetter
	}
	return crossingOK
}

// crossingDelay is message i's Delay: one message in four is due a little
// later, during the run (or after a reopen).
func crossingDelay(i int) time.Duration {
	if i%4 != 1 {
		return 0
	}
	return time.Duration(50+(i%5)*50) * time.Millisecond
}

// crossingLedger records what the crossing test sent and every handler
// run: the attempt numbers each message was run with, its successes, and
// the runs of delayed messages before their delivery time. Messages are
// numbered in the order they were sent, their bodies "m-<number>".
type crossingLedger struct {
	mu       sync.Mutex
	due      map[int]time.Time // delayed message i is not due before this
	acked    []int             // sends acknowledged, in order
	attempts map[int][]int
	ok       map[int]int // successful runs
	lastOK   map[int]int // the index among its runs of the last success
	early    []string
	runs     atomic.Int64
	okRuns   atomic.Int64
	inFlight atomic.Int64 // handler runs going on now
}

func newCrossingLedger() *crossingLedger {
	return &crossingLedger{due: map[int]time.Time{}, attempts: map[int][]int{}, ok: map[int]int{}, lastOK: map[int]int{}}
}

func (l *crossingLedger) sent() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// handle is the members' handler: a little work, then what the message's
// kind asks for.
func (l *crossingLedger) handle(ctx context.Context, m *equeue.Message) error {
	i, err := strconv.Atoi(string(m.Body[len("m-"):]))
	if err != nil {
		return equeue.DeadLetter(fmt.Errorf("unexpected body %q", m.Body))
	}
	l.inFlight.Add(1)
	defer l.inFlight.Add(-1)
	work := time.Millisecond
	if i%8 == 0 {
		work = 20 * time.Millisecond // a slow one: still running at more stops
	}
	var res error
	select {
	case <-time.After(work):
	case <-ctx.Done():
		// Only past ShutdownTimeout (or HandoffTimeout): a counted attempt.
		res = ctx.Err()
	}
	switch k := crossingKindOf(i); {
	case res != nil:
	case k == crossingFailOnce && m.Attempt == 0:
		res = errors.New("transient failure")
	case k == crossingRetryAfter && m.Attempt < 2:
		res = equeue.RetryAfter(30*time.Millisecond, errors.New("not yet"))
	case k == crossingAlwaysFails:
		res = errors.New("poison")
	case k == crossingDeadLetter:
		res = equeue.DeadLetter(errors.New("unprocessable"))
	}
	now := time.Now()
	l.mu.Lock()
	if due, ok := l.due[i]; ok && m.Attempt == 0 && now.Before(due) {
		l.early = append(l.early, fmt.Sprintf("m-%d run %v before it was due", i, due.Sub(now)))
	}
	l.attempts[i] = append(l.attempts[i], m.Attempt)
	if res == nil {
		l.ok[i]++
		l.lastOK[i] = len(l.attempts[i]) - 1
	}
	l.mu.Unlock()
	l.runs.Add(1)
	if res == nil {
		l.okRuns.Add(1)
	}
	return res
}

// settled reports whether every acknowledged message that is to succeed
// did and every one that is to be dead-lettered is in dlq.
func (l *crossingLedger) settled(dlq map[int]int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, i := range l.acked {
		switch crossingKindOf(i) {
		case crossingAlwaysFails, crossingDeadLetter:
			if dlq[i] == 0 {
				return false
			}
		default:
			if l.ok[i] == 0 {
				return false
			}
		}
	}
	return true
}

// check asserts the clean-stop promise on what was recorded: every
// acknowledged message is handled successfully exactly once, by its last
// run, or, when its handler fails it for good, is in the dead letters
// exactly once with the attempts it was run for (MaxAttempts for one that
// always fails); the only other runs are its counted retries (attempts 0,
// 1, ... each once, so a repeated run is a duplicate); no message was run
// or dead-lettered but those acknowledged, and no delayed message ran
// before it was due.
func (l *crossingLedger) check(t *testing.T, dlq map[int]int, dlqAttempts map[int]int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.early, "delayed messages run early")
	acked := map[int]bool{}
	for _, i := range l.acked {
		acked[i] = true
		as := l.attempts[i]
		seq := make([]int, len(as))
		for a := range seq {
			seq[a] = a
		}
		if !assert.Equal(t, seq, as, "m-%d: runs by attempt; a repeated attempt is a duplicate", i) {
			continue
		}
		switch crossingKindOf(i) {
		case crossingAlwaysFails, crossingDeadLetter:
			assert.Zero(t, l.ok[i], "m-%d handled successfully (attempts %v)", i, as)
			if assert.Equal(t, 1, dlq[i], "m-%d dead-lettered %d times (attempts %v)", i, dlq[i], as) {
				assert.Equal(t, len(as), dlqAttempts[i], "m-%d dead-lettered with the attempts it was run for", i)
			}
			if crossingKindOf(i) == crossingAlwaysFails {
				assert.Len(t, as, crossingMaxAttempts, "m-%d always fails: MaxAttempts runs", i)
			}
		default:
			assert.Equal(t, 1, l.ok[i], "m-%d handled successfully %d times (attempts %v)", i, l.ok[i], as)
			assert.Equal(t, len(as)-1, l.lastOK[i], "m-%d: its success is its last run (attempts %v)", i, as)
			assert.Zero(t, dlq[i], "m-%d handled and dead-lettered", i)
		}
	}
	for i := range l.attempts {
		assert.True(t, acked[i], "m-%d handled but its send was not acknowledged", i)
	}
	for i := range dlq {
		assert.True(t, acked[i], "m-%d dead-lettered but its send was not acknowledged", i)
	}
}

// crossingDeadLetters lists the group's dead letters: how many times each
// message is there, and the attempts of its last copy.
func crossingDeadLetters(t *testing.T, e *equeue.Engine, group string) (count, attempts map[int]int) {
	t.Helper()
	count, attempts = map[int]int{}, map[int]int{}
	for from := int64(0); ; {
		page, err := e.ListDeadLetters(context.Background(), group, equeue.ListDeadLettersRequest{From: from, Max: 1024})
		require.NoError(t, err)
		if len(page) == 0 {
			return count, attempts
		}
		for _, d := range page {
			i, err := strconv.Atoi(string(d.Message.Body[len("m-"):]))
			require.NoError(t, err, "dead letter %q", d.Message.Body)
			count[i]++
			attempts[i] = d.Attempts
			from = d.Offset + 1
		}
	}
}

// TestConsumer_CleanStopCrossingNoDuplicates crosses the clean-stop
// promise with the rest of a group's life, in process and over remote
// (and a 3-node cluster with EQUEUE_CLUSTER_SUITE=1): a clustering group
// of three members with concurrent handlers reads a topic of 8 queues
// while a producer keeps sending; some messages fail once (through the
// retry topic), some ask RetryAfter twice, some always fail (dead-lettered
// after MaxAttempts), some ask for the dead letters at once, and one in
// four is delayed, due during the run. The members are closed cleanly one
// by one while the producer sends, then the engine is closed cleanly and
// reopened (EQUEUE_CLEANSTOP_CROSSING_ROUNDS generations of this, default
// one), and three new members drain. Every acknowledged send is handled
// successfully exactly once, or dead-lettered exactly once with the
// attempts documented; the only other runs are its counted retries; none
// of the delayed ones ran early, and no goroutine outlives the test.
func TestConsumer_CleanStopCrossingNoDuplicates(t *testing.T) {
	rounds := 1
	if v := os.Getenv(cleanStopCrossingRoundsEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, cleanStopCrossingRoundsEnv)
		rounds = n
	}
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			clusterSuiteOnly(t, tr)
			testCleanStopCrossing(t, tr, rounds)
		})
	}
}

func testCleanStopCrossing(t *testing.T, tr string, rounds int) {
	// Registered first, so it runs after every other cleanup: the engine,
	// the server and the clients are closed by then.
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) })
	// A minute per generation and one for the drain.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds+1)*time.Minute)
	defer cancel()
	e, b, reopen := openOverRestartable(t, tr, &equeue.Options{Sync: equeue.SyncNever})
	require.NoError(t, e.CreateTopic(ctx, "t", 8))
	l := newCrossingLedger()
	start := func(b equeue.Broker, id string) *equeue.Consumer {
		return startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: id,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest,
			Concurrency: 4, MaxAttempts: crossingMaxAttempts,
			RetryTopicDelays: []time.Duration{20 * time.Millisecond, 40 * time.Millisecond},
			LocalRetryDelay:  10 * time.Millisecond, SendBackRetryDelay: 10 * time.Millisecond,
			CommitInterval: 50 * time.Millisecond, Handler: l.handle})
	}
	next := 0 // the next message's number
	// produce sends until the returned stop is called, which returns once
	// the producer is closed; each send's number is recorded once
	// acknowledged. A test that fails first stops it in its cleanup.
	produce := func(b equeue.Broker) (stop func()) {
		p := newProducer(t, b, nil)
		quit, done := make(chan struct{}), make(chan struct{})
		var once sync.Once
		stop = func() {
			once.Do(func() { close(quit) })
			<-done
		}
		t.Cleanup(stop)
		go func() {
			defer close(done)
			defer func() { assert.NoError(t, p.Close()) }()
			for {
				select {
				case <-quit:
					return
				default:
				}
				i := next
				next++
				d := crossingDelay(i)
				if d > 0 {
					l.mu.Lock()
					l.due[i] = time.Now().Add(d)
					l.mu.Unlock()
				}
				_, err := p.Send(ctx, &equeue.Message{Topic: "t", Delay: d, Body: fmt.Appendf(nil, "m-%d", i)})
				if !assert.NoError(t, err, "send m-%d", i) {
					return
				}
				l.mu.Lock()
				l.acked = append(l.acked, i)
				l.mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
		return stop
	}
	// progress waits until more sends were acknowledged and, with members
	// running, more handler runs succeeded: each stop comes under load.
	progress := func(handling bool) {
		sent, ok := l.sent(), l.okRuns.Load()
		eventually(t, 30*time.Second, func() bool {
			return l.sent() >= sent+60 && (!handling || l.okRuns.Load() >= ok+30)
		}, "the producer sends and the members handle")
	}
	busyStops := 0 // stops that came while handlers ran (of any member)
	for round := range rounds {
		var ms []*equeue.Consumer
		for k := range 3 {
			ms = append(ms, start(b, fmt.Sprintf("r%d-m%d", round, k)))
		}
		stopProducing := produce(b)
		progress(true)
		for k, m := range ms {
			if l.inFlight.Load() > 0 {
				busyStops++
			}
			require.NoError(t, m.Close(), "round %d: clean stop of member %d", round, k)
			progress(k < len(ms)-1)
		}
		stopProducing()
		e, b = reopen() // a clean close of the engine, then an open on its data
	}
	// The last generation drains, with no more sends.
	var ms []*equeue.Consumer
	for k := range 3 {
		ms = append(ms, start(b, fmt.Sprintf("drain-m%d", k)))
	}
	eventually(t, 60*time.Second, func() bool {
		dlq, _ := crossingDeadLetters(t, e, "g")
		return l.settled(dlq)
	}, "every acknowledged send handled or dead-lettered (%d sent)", l.sent())
	// Nothing left to come: no delayed message (a retry copy) pending, and
	// every queue of the group, its retry topic's too, committed to its end.
	eventually(t, 30*time.Second, func() bool {
		d, err := e.Delayed(ctx, 0)
		require.NoError(t, err)
		return d.Pending == 0 && groupLag(t, e, "g") == 0
	}, "the group drained")
	for k, m := range ms {
		require.NoError(t, m.Close(), "clean stop of drain member %d", k)
	}
	assert.Zero(t, groupLag(t, e, "g"), "the stops committed every message")
	dlq, dlqAttempts := crossingDeadLetters(t, e, "g")
	l.check(t, dlq, dlqAttempts)
	t.Logf("%d sends acknowledged, %d handler runs, %d of %d stops while handlers ran", l.sent(), l.runs.Load(), busyStops, 3*rounds)
}

package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// handledLog records, per message body, how many handler runs finished it
// successfully.
type handledLog struct {
	mu   sync.Mutex
	done map[string]int
	runs int
}

func newHandledLog() *handledLog { return &handledLog{done: map[string]int{}} }

func (l *handledLog) add(body string) {
	l.mu.Lock()
	l.done[body]++
	l.runs++
	l.mu.Unlock()
}

func (l *handledLog) count() (distinct, runs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.done), l.runs
}

// checkOnce asserts that each of the n messages was handled exactly once.
func (l *handledLog) checkOnce(t *testing.T, n int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range n {
		body := fmt.Sprintf("m-%d", i)
		assert.Equal(t, 1, l.done[body], "%s handled %d times", body, l.done[body])
	}
	assert.Len(t, l.done, n, "distinct messages handled")
}

// cleanStopKind is one kind of consumption the clean-stop promise is
// checked for.
type cleanStopKind struct {
	name       string
	model      equeue.MessageModel
	orderly    bool
	priorities int
	failOnce   bool // odd messages fail their first attempt
	pull       bool // a PullConsumer that commits each message it handled
	batch      bool // a BatchHandler
	// cancelled: the stop cancels the held handlers (a short
	// ShutdownTimeout), which fail with their context's error.
	cancelled bool
}

var cleanStopKinds = []cleanStopKind{
	{name: "clustering"},
	{name: "broadcast", model: equeue.Broadcasting},
	{name: "orderly", orderly: true},
	{name: "priority", priorities: 2},
	{name: "retry", failOnce: true},
	{name: "orderlyretry", orderly: true, failOnce: true},
	{name: "batch", batch: true},
	{name: "batchretry", batch: true, failOnce: true},
	{name: "orderlybatchretry", orderly: true, batch: true, failOnce: true},
	{name: "prioritybatchretry", priorities: 2, batch: true, failOnce: true},
	{name: "orderlybroadcast", model: equeue.Broadcasting, orderly: true},
	{name: "cancelled", cancelled: true},
	{name: "cancelledorderly", orderly: true, cancelled: true},
	{name: "cancelledbroadcast", model: equeue.Broadcasting, cancelled: true},
	{name: "cancelledpriority", priorities: 2, cancelled: true},
	{name: "pull", pull: true},
	{name: "pullpriority", pull: true, priorities: 2},
}

// cleanStopMember is a running member of the group under test.
type cleanStopMember interface{ stop(t *testing.T) }

type consumerMember struct{ c *equeue.Consumer }

func (m consumerMember) stop(t *testing.T) { assert.NoError(t, m.c.Close()) }

// pullMember runs a PullConsumer loop per assigned queue: fetch, handle,
// commit each message; stop ends the loops after the message in hand is
// committed, then closes the consumer.
type pullMember struct {
	pc   *equeue.PullConsumer
	quit chan struct{}
	wg   sync.WaitGroup
}

func (m *pullMember) stop(t *testing.T) {
	close(m.quit)
	m.wg.Wait()
	assert.NoError(t, m.pc.Close())
}

func startPullMember(t *testing.T, b equeue.Broker, o equeue.PullConsumerOptions, handle func(*equeue.Message) error) *pullMember {
	pc, err := equeue.NewPullConsumer(b, o)
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctxT(t)))
	m := &pullMember{pc: pc, quit: make(chan struct{})}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx := context.Background()
		for {
			select {
			case <-m.quit:
				return
			default:
			}
			for _, q := range pc.Assigned() {
				msgs, err := pc.Fetch(ctx, q, 8, 10*time.Millisecond)
				if err != nil {
					continue
				}
				for _, msg := range msgs {
					select {
					case <-m.quit:
						return
					default:
					}
					for handle(msg) != nil {
					}
					if err := pc.Commit(ctx, q, msg.Offset+1); err != nil {
						t.Errorf("commit %s at %d: %v", q, msg.Offset+1, err)
						return
					}
				}
			}
		}
	}()
	return m
}

// TestConsumer_CleanStopMidStreamNoDuplicates: for every kind of consumer
// (clustering, broadcasting, orderly, priority lanes, batch handlers, a
// message that fails once and goes through the retry topic or is retried
// in place, also from a batch that returns a partial result, handlers the stop cancels and that fail with their context's
// error, a PullConsumer committing what it handled), over each transport,
// a member is stopped cleanly while its handlers run, then a new one (same
// group, same member ID) consumes the rest: after the consumer alone
// restarted, after the engine was closed and reopened between the runs,
// and, in process, after Engine.Close closed the running consumer itself.
// Every message is handled successfully exactly once across both runs.
// Over a 3-node cluster with EQUEUE_CLUSTER_SUITE=1 (the engine's restart
// is every node's).
func TestConsumer_CleanStopMidStreamNoDuplicates(t *testing.T) {
	for _, tr := range transports {
		for _, restart := range []string{"consumer", "engine", "engineclose"} {
			if restart == "engineclose" && tr != "inproc" {
				continue // Engine.Close closes only consumers opened in process
			}
			for _, k := range cleanStopKinds {
				if restart == "engineclose" && k.pull {
					continue // a PullConsumer's loop and commits are its user's
				}
				t.Run(tr+"/"+restart+"/"+k.name, func(t *testing.T) {
					clusterSuiteOnly(t, tr)
					testCleanStopMidStream(t, tr, restart, k)
				})
			}
		}
	}
}

func testCleanStopMidStream(t *testing.T, tr, restart string, k cleanStopKind) {
	const n = 200
	ctx := ctxT(t)
	e, b, reopen := openOverRestartable(t, tr, &equeue.Options{Sync: equeue.SyncNever})
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 2, Priorities: k.priorities}))
	log := newHandledLog()
	// From a third of the messages on, the first run's handlers wait at
	// release (in the cancelled kinds, for the stop to cancel them), so
	// the stop comes while they run. unheld counts the handlers running
	// that are not held: the stop waits until none is.
	var (
		holdMu   sync.Mutex
		holding  bool
		unheld   int
		setHeld  = func(h bool) { holdMu.Lock(); holding = h; holdMu.Unlock() }
		noUnheld = func() bool { holdMu.Lock(); defer holdMu.Unlock(); return unheld == 0 }
	)
	held, release := make(chan struct{}, 1), make(chan struct{})
	handle := func(ctx context.Context, m *equeue.Message) error {
		holdMu.Lock()
		h := holding
		if !h {
			unheld++
		}
		holdMu.Unlock()
		if h {
			select {
			case held <- struct{}{}:
			default:
			}
			if k.cancelled {
				<-ctx.Done()
				return ctx.Err()
			}
			<-release
		} else {
			defer func() { holdMu.Lock(); unheld--; holdMu.Unlock() }()
		}
		var i int
		_, _ = fmt.Sscanf(string(m.Body), "m-%d", &i)
		time.Sleep(time.Millisecond) // the work, not cut short by a stop
		if k.failOnce && i%2 == 1 && m.Attempt == 0 {
			return errors.New("transient failure")
		}
		log.add(string(m.Body))
		return nil
	}
	start := func(b equeue.Broker) cleanStopMember {
		subs := []equeue.Subscription{{Topic: "t"}}
		if k.pull {
			return startPullMember(t, b, equeue.PullConsumerOptions{Group: "g", ID: "m1", Model: k.model,
				Subscriptions: subs, From: equeue.ConsumeFromEarliest}, func(m *equeue.Message) error { return handle(context.Background(), m) })
		}
		o := equeue.ConsumerOptions{Group: "g", ID: "m1", Model: k.model,
			Orderly: k.orderly, Concurrency: 4, Subscriptions: subs, From: equeue.ConsumeFromEarliest,
			RetryDelays: []time.Duration{10 * time.Millisecond}, LocalRetryDelay: 10 * time.Millisecond,
			Handler: handle}
		if k.cancelled {
			// Short, so that the held handlers are cancelled soon. Every
			// handler running in the stop is held (the stop waits until
			// the others have returned, and none starts unheld before it
			// ends): none has work to finish within the drain, where one
			// that outlived it would be abandoned, its success ignored
			// and its message delivered again, as documented. The bound
			// leaves a cancelled handler room to return on a loaded
			// machine.
			o.ShutdownTimeout = 500 * time.Millisecond
		}
		if k.batch {
			o.Handler, o.BatchSize = nil, 8
			o.BatchHandler = func(ctx context.Context, msgs []*equeue.Message) error {
				// A partial result: the failed messages only. An orderly
				// batch is handled again from its first failed message on,
				// so its handler stops there.
				failed := map[int]error{}
				for i, m := range msgs {
					if err := handle(ctx, m); err != nil {
						failed[i] = err
						if k.orderly {
							break
						}
					}
				}
				if len(failed) > 0 {
					return &equeue.BatchError{Failed: failed}
				}
				return nil
			}
		}
		return consumerMember{startConsumer(t, b, o)}
	}
	p := newProducer(t, b, nil)
	for i := range n {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{fmt.Sprint("k", i%7)}, Priority: i % 2,
			Body: fmt.Appendf(nil, "m-%d", i)})
		require.NoError(t, err)
	}
	m := start(b)
	eventually(t, 30*time.Second, func() bool { _, runs := log.count(); return runs >= n/3 }, "a third handled")
	setHeld(true)
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("no handler running to stop under")
	}
	// The handlers that started before the hold finish their work first:
	// from here on, every handler running is held until the stop.
	eventually(t, 30*time.Second, noUnheld, "the handlers not held returned")
	if !k.cancelled {
		// Let the stop begin, then the held handlers finish (whenever
		// this runs, the stop waits for them: the default drain is 30 s).
		time.AfterFunc(20*time.Millisecond, func() { close(release) })
	}
	switch restart {
	case "consumer":
		m.stop(t) // while handlers run
	case "engine":
		m.stop(t)
		e, b = reopen()
	case "engineclose":
		e, b = reopen() // Engine.Close closes the running consumer first
	}
	setHeld(false) // the next run's handlers are not held
	distinct, runs := log.count()
	require.Less(t, distinct, n, "stopped mid-stream (%d runs)", runs)
	m = start(b)
	eventually(t, 30*time.Second, func() bool { d, _ := log.count(); return d == n }, "every message handled")
	m.stop(t)
	assert.Zero(t, groupLagOf(t, e, "g", "t"), "the stop committed every message")
	log.checkOnce(t, n)
}

// groupLagOf sums the lag of the queues of topic in group.
func groupLagOf(t testing.TB, e *equeue.Engine, group, topic string) int64 {
	gi, err := e.Group(context.Background(), group)
	require.NoError(t, err)
	var lag int64
	for _, q := range gi.Queues {
		if q.Topic == topic {
			lag += q.Lag
		}
	}
	return lag
}

// TestConsumer_CleanStopPastAStuckHandlerRepeatsOnlyIt: a handler that
// outlives both of Close's waits holds its queue's committed offset below
// its message, while the messages after it are done. A restart (of the
// consumer, or of the engine between the runs) handles that message again
// and none of the done ones; so does a second restart that comes before
// the restored run got that far. Clustering and broadcasting, in process
// and over remote (and a 3-node cluster with EQUEUE_CLUSTER_SUITE=1).
func TestConsumer_CleanStopPastAStuckHandlerRepeatsOnlyIt(t *testing.T) {
	for _, tr := range transports {
		for _, restart := range []string{"consumer", "engine"} {
			for _, model := range []equeue.MessageModel{equeue.Clustering, equeue.Broadcasting} {
				t.Run(fmt.Sprintf("%s/%s/%v", tr, restart, model), func(t *testing.T) {
					clusterSuiteOnly(t, tr)
					testCleanStopPastAStuckHandler(t, tr, restart, model)
				})
			}
		}
	}
}

func testCleanStopPastAStuckHandler(t *testing.T, tr, restart string, model equeue.MessageModel) {
	const n, stuck = 60, "m-5"
	ctx := ctxT(t)
	e, b, reopen := openOverRestartable(t, tr, &equeue.Options{Sync: equeue.SyncNever})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, b, nil)
	for i := range n {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m-%d", i)})
		require.NoError(t, err)
	}
	log := newHandledLog()
	var stuckRuns atomic.Int32
	running, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	start := func(b equeue.Broker, stuckOnce bool) *equeue.Consumer {
		return startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: "m1", Model: model,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest,
			Concurrency: 4, ShutdownTimeout: 20 * time.Millisecond, CommitInterval: time.Hour,
			Handler: func(_ context.Context, m *equeue.Message) error {
				if string(m.Body) == stuck && stuckOnce && stuckRuns.Add(1) == 1 {
					running <- struct{}{}
					<-release // ignores its context; its late result is ignored
					return nil
				}
				log.add(string(m.Body))
				return nil
			}})
	}
	c := start(b, true)
	select {
	case <-running:
	case <-ctx.Done():
		t.Fatal("the stuck handler did not start")
	}
	eventually(t, 30*time.Second, func() bool { d, _ := log.count(); return d == n-1 }, "the others handled")
	require.ErrorIs(t, c.Close(), equeue.ErrHandlerAbandoned, "Close reports the stuck handler")
	if restart == "engine" {
		e, b = reopen()
	}
	// A second run stopped before it handled anything, then a third.
	c = startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: "m1", Model: model,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			<-ctx.Done()
			return equeue.ErrNotHandled
		}, ShutdownTimeout: 20 * time.Millisecond})
	require.NoError(t, c.Close())
	c = start(b, false)
	eventually(t, 30*time.Second, func() bool { d, _ := log.count(); return d == n }, "every message handled")
	require.NoError(t, c.Close())
	assert.Zero(t, groupLagOf(t, e, "g", "t"), "the stop committed every message")
	log.checkOnce(t, n)
}

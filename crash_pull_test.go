package equeue_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// The pull-and-priority crash test runs this test binary as a child that
// consumes, with a PullConsumer committing each message it handled and
// with a Consumer of a topic with priority lanes, and kills it with
// SIGKILL while it does, round after round (EQUEUE_CRASH_ROUNDS, default
// 3). Each round the parent sends more messages first.

// Topics of the pull-and-priority crash test: crashPullTopic is read by a
// PullConsumer, crashLanesTopic (two lanes) by a Consumer.
const (
	crashPullTopic  = "cpull"
	crashLanesTopic = "clanes"
)

// TestCrashPullChild is the child's workload; it does nothing unless
// started by TestCrash_PullAndPriorityConsumersLoseNothing.
func TestCrashPullChild(t *testing.T) {
	dir := crashChildDir(t)
	ctx := context.Background()
	say := childSay()
	fail := func(what string, err error) {
		say("ERROR %s %v", what, err)
		os.Exit(3)
	}
	e, err := equeue.Open(dir, nil) // SyncAlways
	if err != nil {
		fail("open", err)
	}
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "child-lanes", Subscriptions: []equeue.Subscription{{Topic: crashLanesTopic}},
		From: equeue.ConsumeFromEarliest, CommitInterval: 20 * time.Millisecond, Concurrency: 2,
		Handler: func(_ context.Context, m *equeue.Message) error {
			time.Sleep(time.Millisecond)
			say("HANDLED %s", m.Body)
			return nil
		}})
	if err == nil {
		err = c.Start(ctx)
	}
	if err != nil {
		fail("consumer", err)
	}
	pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "gpull", ID: "child-pull", Subscriptions: []equeue.Subscription{{Topic: crashPullTopic}},
		From: equeue.ConsumeFromEarliest})
	if err == nil {
		err = pc.Start(ctx)
	}
	if err != nil {
		fail("pull consumer", err)
	}
	say("READY")
	for {
		for _, q := range pc.Assigned() {
			msgs, err := pc.Fetch(ctx, q, 16, 20*time.Millisecond)
			if err != nil {
				fail("fetch", err)
			}
			for _, m := range msgs {
				time.Sleep(time.Millisecond)
				say("HANDLED %s", m.Body)
				if err := pc.Commit(ctx, q, m.Offset+1); err != nil {
					fail("commit", err)
				}
				say("COMMITTED %d %d", q.Queue, m.Offset+1)
			}
		}
	}
}

// TestCrash_PullAndPriorityConsumersLoseNothing: after every kill of a
// consumer process, nothing is missing (a PullConsumer's message past its
// last commit, or a lane's past its committed offset, is delivered again),
// and no commit of the PullConsumer that returned was lost: no message
// below it is fetched again.
func TestCrash_PullAndPriorityConsumersLoseNothing(t *testing.T) {
	rounds := crashRounds(t, 3)
	rng := crashRand(t)
	const perRound = 150
	ctx := ctxT(t)
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, crashPullTopic, 2))
	require.NoError(t, e.CreateTopicWith(ctx, crashLanesTopic, equeue.TopicOptions{Queues: 2, Priorities: 2}))
	require.NoError(t, e.Close())
	sent := map[string]bool{}
	handled := map[string]int{}
	committed := map[int]int64{} // queue of crashPullTopic: the highest commit that returned
	for round := range rounds {
		e, err := equeue.Open(dir, nil)
		require.NoError(t, err)
		p := newProducer(t, e, nil)
		for i := range perRound {
			for _, topic := range []string{crashPullTopic, crashLanesTopic} {
				body := fmt.Sprintf("%s-r%d-%d", topic, round, i)
				_, err := p.Send(ctx, &equeue.Message{Topic: topic, Priority: i % 2, Body: []byte(body)})
				require.NoError(t, err)
				sent[body] = true
			}
		}
		require.NoError(t, p.Close())
		require.NoError(t, e.Close())

		c := startCrashChild(t, crashChildSpec{Test: "TestCrashPullChild", Dir: dir, Round: round, Line: func(l string) error {
			f := strings.Fields(l)
			switch {
			case len(f) == 2 && f[0] == "HANDLED":
				handled[f[1]]++
			case len(f) == 3 && f[0] == "COMMITTED":
				q, _ := strconv.Atoi(f[1])
				off, _ := strconv.ParseInt(f[2], 10, 64)
				committed[q] = max(committed[q], off)
			}
			return nil
		}})
		c.awaitReady()
		c.killAtRandom(rng, 50*time.Millisecond, 200*time.Millisecond)
		t.Logf("round %d: killed with %d of %d messages handled", round, len(handled), len(sent))

		e = crashReopen(t, dir, round, nil)
		gi, err := e.Group(ctx, "gpull")
		require.NoError(t, err)
		for _, q := range gi.Queues {
			if q.Topic == crashPullTopic {
				assert.GreaterOrEqual(t, q.Committed, committed[q.Queue], "round %d: a commit that returned was lost (queue %d)", round, q.Queue)
			}
		}
		require.NoError(t, e.Close())
	}

	// Finally: consume the rest, both ways, in this process.
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, e.Close()) }()
	var mu sync.Mutex
	record := func(body string) {
		mu.Lock()
		handled[body]++
		mu.Unlock()
	}
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "final-lanes", Subscriptions: []equeue.Subscription{{Topic: crashLanesTopic}},
		Handler: func(_ context.Context, m *equeue.Message) error { record(string(m.Body)); return nil }})
	pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "gpull", ID: "final-pull", Subscriptions: []equeue.Subscription{{Topic: crashPullTopic}}})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	defer func() { assert.NoError(t, pc.Close()) }()
	missing := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for body := range sent {
			if handled[body] == 0 {
				n++
			}
		}
		return n
	}
	eventually(t, 60*time.Second, func() bool {
		for _, q := range pc.Assigned() {
			msgs, err := pc.Fetch(ctx, q, 64, 0)
			require.NoError(t, err)
			for _, m := range msgs {
				assert.GreaterOrEqual(t, m.Offset, committed[q.Queue], "a committed message of queue %d fetched again", q.Queue)
				record(string(m.Body))
			}
			if len(msgs) > 0 {
				require.NoError(t, pc.Commit(ctx, q, msgs[len(msgs)-1].Offset+1))
			}
		}
		return missing() == 0
	}, "every message handled at least once (%d missing)", func() any { return missing() })
	mu.Lock()
	defer mu.Unlock()
	for body := range handled {
		assert.True(t, sent[body], "%s handled but never sent", body)
	}
}

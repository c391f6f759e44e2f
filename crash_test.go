package equeue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// The crash test runs this test binary as a child process that produces
// (SyncAlways), consumes and commits, and kills it with SIGKILL at a random
// moment, round after round, checking the store after each kill.
//
// EQUEUE_CRASH_ROUNDS sets the number of rounds (default 3; the long run uses 20+).

// TestCrashChild is the child's workload; it does nothing unless started by
// TestCrash_KillAndReopen.
func TestCrashChild(t *testing.T) {
	dir := crashChildDir(t)
	round := crashChildRound()
	ctx := context.Background()
	say := childSay()
	e, err := openCrashChild(dir) // SyncAlways
	if err != nil {
		say("ERROR open %v", err)
		os.Exit(3)
	}
	for _, name := range []string{"t", "d"} {
		if err := e.CreateTopic(ctx, name, 4); err != nil && !strings.Contains(err.Error(), "exists") {
			say("ERROR create %v", err)
			os.Exit(3)
		}
	}
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "child", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, CommitInterval: time.Hour,
		Handler: func(_ context.Context, m *equeue.Message) error {
			say("HANDLED %s %d %d", m.ID, m.Queue, m.Offset)
			return nil
		}})
	if err == nil {
		err = c.Start(ctx)
	}
	if err != nil {
		say("ERROR consumer %v", err)
		os.Exit(3)
	}
	p, _ := equeue.NewProducer(e, nil)
	say("READY")
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("r%d-g%d-%d", round, g, i)
				r, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: id, Keys: []string{fmt.Sprint(i % 7)}, Body: []byte(id)})
				if err != nil {
					say("ERROR send %v", err)
					return
				}
				say("ACK %s %d %d", id, r.Queue, r.Offset)
				if i%25 == 0 {
					did := "d" + id
					if _, err := p.Send(ctx, &equeue.Message{Topic: "d", ID: did, Body: []byte(did), Delay: time.Duration(300+rand.IntN(1200)) * time.Millisecond}); err == nil {
						say("DACK %s", did)
					}
				}
			}
		}()
	}
	for {
		time.Sleep(20 * time.Millisecond)
		if err := c.Commit(ctx); err != nil {
			continue
		}
		gi, err := e.Group(ctx, "g")
		if err != nil {
			continue
		}
		for _, q := range gi.Queues {
			if q.Topic == "t" && q.Committed >= 0 {
				say("COMMITTED %d %d", q.Queue, q.Committed)
			}
		}
	}
}

type crashPos struct {
	queue  int
	offset int64
}

func TestCrash_KillAndReopen(t *testing.T) {
	rounds := crashRounds(t, 3)
	rng := crashRand(t)
	dir := t.TempDir()
	ctx := ctxT(t)
	acked := map[string]crashPos{}
	delayed := map[string]bool{}
	handled := map[string]bool{}
	committedAtStart := map[int]int64{}
	for round := range rounds {
		lastCommit := map[int]int64{}
		var env []string
		if round%2 == 1 {
			env = append(env, crashIncompleteEnv+"=1")
		}
		c := startCrashChild(t, crashChildSpec{Test: "TestCrashChild", Dir: dir, Round: round, Env: env, Line: func(l string) error {
			f := strings.Fields(l)
			switch {
			case len(f) == 4 && f[0] == "ACK":
				q, _ := strconv.Atoi(f[2])
				off, _ := strconv.ParseInt(f[3], 10, 64)
				acked[f[1]] = crashPos{q, off}
			case len(f) == 2 && f[0] == "DACK":
				delayed[f[1]] = true
			case len(f) == 4 && f[0] == "HANDLED":
				q, _ := strconv.Atoi(f[2])
				off, _ := strconv.ParseInt(f[3], 10, 64)
				handled[f[1]] = true
				if off < committedAtStart[q] {
					return fmt.Errorf("committed message %d/%d delivered again", q, off)
				}
			case len(f) == 3 && f[0] == "COMMITTED":
				q, _ := strconv.Atoi(f[1])
				off, _ := strconv.ParseInt(f[2], 10, 64)
				lastCommit[q] = max(lastCommit[q], off)
			}
			return nil
		}})
		c.awaitReady()
		c.killAtRandom(rng, 100*time.Millisecond, 500*time.Millisecond)

		// Reopen and check what the store holds.
		e := crashReopen(t, dir, round, nil)
		found := crashReadTopic(t, ctx, e, "t")
		for id, pos := range acked {
			require.Equal(t, []crashPos{pos}, found[id], "round %d: acknowledged %s must be stored exactly once where its Send said", round, id)
		}
		gi, err := e.Group(ctx, "g")
		require.NoError(t, err)
		for _, q := range gi.Queues {
			if q.Topic != "t" {
				continue
			}
			assert.GreaterOrEqual(t, q.Committed, lastCommit[q.Queue], "round %d: a commit that returned was lost", round)
			committedAtStart[q.Queue] = q.Committed
		}
		require.NoError(t, e.Close())
		t.Logf("round %d: %d acknowledged sends stored exactly once, %d delayed pending or delivered", round, len(acked), len(delayed))
	}
	require.NotEmpty(t, acked)

	// Finally: consume the rest and wait for every delayed message.
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	defer e.Close()
	var mu sync.Mutex
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "final", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			if m.Offset < committedAtStart[m.Queue] {
				t.Errorf("committed message %d/%d delivered again", m.Queue, m.Offset)
			}
			handled[m.ID] = true
			mu.Unlock()
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	eventually(t, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for id := range acked {
			if !handled[id] {
				return false
			}
		}
		return true
	}, "every acknowledged message is handled at least once")
	require.NoError(t, c.Close())
	seenDelayed := func() map[string]int {
		seen := map[string]int{}
		for id, ids := range crashReadTopic(t, ctx, e, "d") {
			seen[id] = len(ids)
		}
		return seen
	}
	var seen map[string]int
	eventually(t, 30*time.Second, func() bool {
		seen = seenDelayed()
		for id := range delayed {
			if seen[id] == 0 {
				return false
			}
		}
		return true
	}, "every acknowledged delayed message delivered")
	for id := range delayed {
		assert.Equal(t, 1, seen[id], "delayed %s delivered exactly once", id)
	}
	t.Logf("%d rounds: %d acknowledged sends, %d delayed, all checked", rounds, len(acked), len(delayed))
}

package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
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
	"github.com/equeue-go/equeue/store"
)

// TestCrash_AdminKillAndReopen kills, with SIGKILL, a child process that
// sends (SyncAlways) and consumes with a retrying group while it resets
// the group's offsets over live send-back marks, redrives its dead
// letters, deletes its dead-letter topic during a redrive, and sends
// delayed messages; every other life runs on a store whose writes are too
// small for the large delayed messages, which are parked until a reopen.
// After each kill the parent reopens the directory and checks: every
// acknowledged send stored once where its Send said; the committed
// offsets not below what the last confirmed commit or reset left (a reset
// under way at the kill may have landed); every dead letter one of a
// message sent and failing always; every redrive that returned listed as
// redriven unless the dead-letter topic was deleted after it; no
// acknowledged delayed message delivered twice, and those not delivered
// still pending. At the end every acknowledged delayed message is
// delivered once. The schedule of the child's actions and of the kills is
// drawn from a seed (EQUEUE_CRASH_SEED, logged); EQUEUE_CRASH_ROUNDS sets
// the rounds (default 3).
func TestCrash_AdminKillAndReopen(t *testing.T) {
	rounds := crashRounds(t, 3)
	rng := crashRand(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := &crashAdmin{acked: map[string]crashPos{}, sent: map[string]bool{}, dacked: map[string]bool{}, floor: map[int]int64{}}
	for round := range rounds {
		h.runChild(t, dir, round, rng)
		e := crashReopen(t, dir, round, crashAdminReopen)
		h.check(t, ctx, e, round)
		require.NoError(t, e.Close())
	}
	require.NotEmpty(t, h.acked)
	require.NotEmpty(t, h.dacked)

	e, err := crashAdminOpen(dir, false, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	var seen map[string][]crashPos
	eventually(t, 60*time.Second, func() bool {
		seen = crashReadTopic(t, ctx, e, crashAdminDelayTopic)
		for id := range h.dacked {
			if len(seen[id]) == 0 {
				return false
			}
		}
		return true
	}, "every acknowledged delayed message delivered")
	for id := range h.dacked {
		assert.Len(t, seen[id], 1, "delayed %s delivered exactly once", id)
	}
	t.Logf("%d rounds: %d acknowledged sends, %d delayed, %d resets, %d redrives, %d dead-letter topic deletions, %d moves parked",
		rounds, len(h.acked), len(h.dacked), h.resets, h.redrives, h.dlqDeletes, h.parks)
}

const (
	crashAdminTopic      = "at"
	crashAdminDelayTopic = "ad"
	crashAdminGroup      = "ag"
	crashAdminBig        = 3000
)

// crashAdminFails reports whether the group's handler fails id always.
func crashAdminFails(id string) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return h.Sum32()%4 == 0
}

// crashAdminOpen opens dir; small, on a store whose writes hold no value
// of crashAdminBig bytes, with log, if not nil, told of every delayed
// message parked as too large to move.
func crashAdminOpen(dir string, small bool, log func(string, ...any)) (*equeue.Engine, error) {
	if !small {
		return equeue.Open(dir, nil)
	}
	b, err := store.OpenBadger(dir, nil)
	if err != nil {
		return nil, err
	}
	lim := b.Limits()
	lim.ValueThreshold, lim.MaxBytes = 0, 2048
	o := &equeue.Options{Store: huntLimited{b, lim}}
	if log != nil {
		o.Logger = slog.New(slog.NewTextHandler(crashAdminParks(log), &slog.HandlerOptions{Level: slog.LevelError}))
	}
	return equeue.Open("", o)
}

// crashAdminReopen opens dir as the parent does after a kill.
func crashAdminReopen(dir string) (*equeue.Engine, error) { return crashAdminOpen(dir, false, nil) }

// crashAdminParks is a log writer that tells say of each report of a
// parked move.
type crashAdminParks func(string, ...any)

func (say crashAdminParks) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "too large to move") {
		say("PARKED")
	}
	return len(p), nil
}

// TestCrashAdminChild is the child's workload; it does nothing unless
// started by TestCrash_AdminKillAndReopen.
func TestCrashAdminChild(t *testing.T) {
	dir := crashChildDir(t)
	round := crashChildRound()
	seed, _ := strconv.ParseUint(os.Getenv("EQUEUE_CRASH_SEED"), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 1))
	ctx := context.Background()
	say := childSay()
	small := round%2 == 1
	e, err := crashAdminOpen(dir, small, say)
	if err != nil {
		say("ERROR open %v", err)
		os.Exit(3)
	}
	for _, tp := range []struct {
		name string
		n    int
	}{{crashAdminTopic, 2}, {crashAdminDelayTopic, 1}} {
		if err := e.CreateTopic(ctx, tp.name, tp.n); err != nil && !errors.Is(err, equeue.ErrTopicExists) {
			say("ERROR create %v", err)
			os.Exit(3)
		}
	}
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: crashAdminGroup, ID: "child", Subscriptions: []equeue.Subscription{{Topic: crashAdminTopic}},
		From: equeue.ConsumeFromEarliest, CommitInterval: time.Hour,
		RetryTopicDelays: []time.Duration{20 * time.Millisecond}, MaxAttempts: 2,
		LocalRetryDelay: 10 * time.Millisecond, SendBackRetryDelay: 20 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error {
			if crashAdminFails(m.ID) {
				return errors.New("fails always")
			}
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
	go func() {
		for i := 0; ; i++ {
			id := fmt.Sprintf("r%d-%d", round, i)
			say("SENDING %s", id)
			r, err := p.Send(ctx, &equeue.Message{Topic: crashAdminTopic, ID: id, Keys: []string{strconv.Itoa(i % 5)}, Body: []byte(id)})
			if err != nil {
				say("ERROR send %v", err)
				return
			}
			say("ACK %s %d %d", id, r.Queue, r.Offset)
			if i%5 == 0 {
				did := "d" + id
				body := []byte(did)
				if !small && i%10 == 0 {
					body = append(body, make([]byte, crashAdminBig)...)
				}
				if _, err := p.Send(ctx, &equeue.Message{Topic: crashAdminDelayTopic, ID: did, Body: body, Delay: time.Duration(50+rand.IntN(400)) * time.Millisecond}); err == nil {
					say("DACK %s", did)
				}
			}
		}
	}()
	// Commits, resets, redrives and deletions of the dead-letter topic,
	// one at a time, so that their lines are in the order they took
	// effect.
	for {
		time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond)
		switch n := rng.IntN(10); {
		case n < 5:
			if err := c.Commit(ctx); err != nil {
				continue
			}
			gi, err := e.Group(ctx, crashAdminGroup)
			if err != nil {
				continue
			}
			for _, q := range gi.Queues {
				if q.Topic == crashAdminTopic && q.Committed >= 0 {
					say("COMMITTED %d %d", q.Queue, q.Committed)
				}
			}
		case n < 7:
			gi, err := e.Group(ctx, crashAdminGroup)
			if err != nil {
				continue
			}
			offs := map[equeue.QueueRef]int64{}
			var line strings.Builder
			for _, q := range gi.Queues {
				if q.Topic == crashAdminTopic && q.Committed >= 0 {
					to := max(0, q.Committed-int64(rng.IntN(8)))
					offs[q.QueueRef] = to
					fmt.Fprintf(&line, " %d %d", q.Queue, to)
				}
			}
			if len(offs) == 0 {
				continue
			}
			say("RESETTING%s", line.String())
			if err := e.ResetOffsets(ctx, crashAdminGroup, equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: offs}); err == nil {
				say("RESET")
			}
		case n < 9:
			dl, err := e.DeadLetters(ctx, crashAdminGroup, 0, 1000)
			if err != nil {
				continue
			}
			var offs []int64
			for _, d := range dl {
				if !d.Redriven && rng.IntN(2) == 0 {
					offs = append(offs, d.Offset)
				}
			}
			if len(offs) == 0 {
				continue
			}
			say("REDRIVING %s", crashAdminOffsets(offs))
			if _, err := e.Redrive(ctx, crashAdminGroup, equeue.RedriveRequest{Offsets: offs}); err == nil {
				say("REDRIVEN %s", crashAdminOffsets(offs))
			}
		default:
			// A redrive of the dead letters listed, against a deletion
			// of their topic.
			dl, _ := e.DeadLetters(ctx, crashAdminGroup, 0, 1000)
			var offs []int64
			for _, d := range dl {
				offs = append(offs, d.Offset)
			}
			say("REDRIVING %s", crashAdminOffsets(offs))
			var wg sync.WaitGroup
			wg.Go(func() { _, _ = e.Redrive(ctx, crashAdminGroup, equeue.RedriveRequest{Offsets: offs}) })
			say("DLQDELETING %s", crashAdminOffsets(offs))
			if err := e.DeleteTopic(ctx, equeue.DLQTopic(crashAdminGroup)); err == nil {
				say("DLQDELETED")
			}
			wg.Wait()
		}
	}
}

func crashAdminOffsets(offs []int64) string {
	return strings.Trim(fmt.Sprint(offs), "[]")
}

func crashAdminParseOffsets(f []string) []int64 {
	var offs []int64
	for _, s := range f {
		off, _ := strconv.ParseInt(s, 10, 64)
		offs = append(offs, off)
	}
	return offs
}

// crashAdmin is what the parent of TestCrashAdminChild knows.
type crashAdmin struct {
	acked  map[string]crashPos
	sent   map[string]bool
	dacked map[string]bool
	// floor is each queue's committed offset the last confirmed commit or
	// reset left.
	floor map[int]int64
	// pending is the reset under way at the kill, if any.
	pending map[int]int64
	// redriven are the dead letters of confirmed redrives since the last
	// deletion of the dead-letter topic began.
	redriven map[int64]bool
	// mayBeRedriven are the dead letters a redrive was asked for since
	// the last confirmed deletion of the dead-letter topic, and those of
	// the redrive run against that deletion, which may land after it in
	// a topic made again.
	mayBeRedriven map[int64]bool
	// racing are the dead letters of the redrive run against the
	// deletion under way.
	racing                              []int64
	resets, redrives, dlqDeletes, parks int
}

func (h *crashAdmin) runChild(t *testing.T, dir string, round int, rng *rand.Rand) {
	t.Helper()
	h.pending = nil
	c := startCrashChild(t, crashChildSpec{Test: "TestCrashAdminChild", Dir: dir, Round: round,
		Env: []string{fmt.Sprintf("EQUEUE_CRASH_SEED=%d", rng.Uint64())}, Line: func(l string) error {
			f := strings.Fields(l)
			if len(f) == 0 {
				return nil
			}
			switch f[0] {
			case "SENDING":
				h.sent[f[1]] = true
			case "ACK":
				q, _ := strconv.Atoi(f[2])
				off, _ := strconv.ParseInt(f[3], 10, 64)
				h.acked[f[1]] = crashPos{q, off}
			case "DACK":
				h.dacked[f[1]] = true
			case "COMMITTED":
				q, _ := strconv.Atoi(f[1])
				off, _ := strconv.ParseInt(f[2], 10, 64)
				h.floor[q] = max(h.floor[q], off)
			case "RESETTING":
				h.pending = map[int]int64{}
				for i := 1; i+1 < len(f); i += 2 {
					q, _ := strconv.Atoi(f[i])
					off, _ := strconv.ParseInt(f[i+1], 10, 64)
					h.pending[q] = off
				}
			case "RESET":
				for q, off := range h.pending {
					h.floor[q] = off
				}
				h.pending = nil
				h.resets++
			case "REDRIVING":
				if h.mayBeRedriven == nil {
					h.mayBeRedriven = map[int64]bool{}
				}
				for _, off := range crashAdminParseOffsets(f[1:]) {
					h.mayBeRedriven[off] = true
				}
			case "REDRIVEN":
				if h.redriven == nil {
					h.redriven = map[int64]bool{}
				}
				for _, off := range crashAdminParseOffsets(f[1:]) {
					h.redriven[off] = true
				}
				h.redrives++
			case "DLQDELETING":
				h.redriven = nil
				h.racing = crashAdminParseOffsets(f[1:])
			case "DLQDELETED":
				h.mayBeRedriven = map[int64]bool{}
				for _, off := range h.racing {
					h.mayBeRedriven[off] = true
				}
				h.dlqDeletes++
			case "PARKED":
				h.parks++
			}
			return nil
		}})
	c.awaitReady()
	c.killAtRandom(rng, 200*time.Millisecond, 800*time.Millisecond)
}

func (h *crashAdmin) check(t *testing.T, ctx context.Context, e *equeue.Engine, round int) {
	t.Helper()
	found := crashReadTopic(t, ctx, e, crashAdminTopic)
	for id, pos := range h.acked {
		require.Equal(t, []crashPos{pos}, found[id], "round %d: acknowledged %s must be stored exactly once where its Send said", round, id)
	}
	gi, err := e.Group(ctx, crashAdminGroup)
	require.NoError(t, err)
	for _, q := range gi.Queues {
		if q.Topic != crashAdminTopic {
			continue
		}
		want := h.floor[q.Queue]
		if off, ok := h.pending[q.Queue]; ok {
			want = min(want, off) // the reset under way may have landed
		}
		assert.GreaterOrEqual(t, q.Committed, want, "round %d: queue %d went back past a confirmed commit or reset", round, q.Queue)
		// The next life starts from what is stored.
		h.floor[q.Queue] = q.Committed
	}
	if _, err := e.Topic(ctx, equeue.DLQTopic(crashAdminGroup)); err == nil {
		listed := map[int64]bool{}
		for _, d := range crashAdminDeadLetters(t, ctx, e) {
			listed[d.Offset] = d.Redriven
			if d.Redriven {
				assert.True(t, h.mayBeRedriven[d.Offset], "round %d: dead letter %d listed as redriven, asked by no redrive of this incarnation of its topic", round, d.Offset)
			}
			assert.True(t, h.sent[d.Message.ID], "round %d: dead letter %d (%s) of no send", round, d.Offset, d.Message.ID)
			assert.True(t, crashAdminFails(d.Message.ID), "round %d: dead letter %d (%s) of a message handled", round, d.Offset, d.Message.ID)
		}
		for off := range h.redriven {
			assert.True(t, listed[off], "round %d: dead letter %d redriven, listed as not (or missing)", round, off)
		}
	} else {
		require.ErrorIs(t, err, equeue.ErrTopicNotFound)
		assert.Empty(t, h.redriven, "round %d: the dead-letter topic is gone, deleted by no deletion after the redrives", round)
	}
	// Pending first: a move between the two reads is then counted in both.
	d, err := e.Delayed(ctx, 0)
	require.NoError(t, err)
	delivered := crashReadTopic(t, ctx, e, crashAdminDelayTopic)
	missing := 0
	for id := range h.dacked {
		assert.LessOrEqual(t, len(delivered[id]), 1, "round %d: delayed %s delivered twice", round, id)
		if len(delivered[id]) == 0 {
			missing++
		}
	}
	assert.GreaterOrEqual(t, d.Pending, missing, "round %d: acknowledged delayed messages neither delivered nor pending", round)
	h.pending = nil
	t.Logf("round %d: %d acknowledged, %d delayed (%d pending), committed %v", round, len(h.acked), len(h.dacked), d.Pending, h.floor)
}

// crashAdminDeadLetters lists every dead letter of the group.
func crashAdminDeadLetters(t *testing.T, ctx context.Context, e *equeue.Engine) []equeue.DLQEntry {
	t.Helper()
	var all []equeue.DLQEntry
	for from := int64(0); ; {
		dl, err := e.DeadLetters(ctx, crashAdminGroup, from, 1024)
		require.NoError(t, err)
		if len(dl) == 0 {
			return all
		}
		all = append(all, dl...)
		from = dl[len(dl)-1].Offset + 1
	}
}

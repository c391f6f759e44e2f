package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestCrash_FeaturesKillAndReopen is TestCrash_KillAndReopen with the
// engine's features at work in the killed process, all of it in one
// process as an embedding program runs it (no cluster, no network):
//
//   - a group whose handler fails some messages once (they come back
//     through its retry topic) and some always (dead-lettered after
//     MaxAttempts), while the process is killed between a failure, its
//     send-back and the commit: each is dead-lettered exactly once;
//   - a topic with a dedup window, sent to with Send and SendAsync, to
//     which every round sends again the IDs that earlier rounds had
//     acknowledged: each must be answered as a duplicate at its first
//     position, whatever the kills in between;
//   - delayed messages (DeliverAt), read by another group: never early;
//   - a topic capped at crashCapMax messages that drops the oldest;
//   - two members of a broadcasting group, one slower than the other;
//   - an orderly group, which must get each queue's messages in order;
//   - a topic created, sent to and deleted, again and again;
//   - a topic with priority lanes, read by a group with a BatchHandler
//     that fails some messages of its batches with a *BatchError, once or
//     always (crash_features_batch_test.go): before each life the parent
//     stores a backlog in every lane, which must be handed out higher
//     lanes first, and after each kill it checks that the group's
//     committed offsets never went back and that only messages above them
//     were delivered again.
//
// After each SIGKILL the parent reopens the directory and checks what is
// stored; after the last, it runs the groups to the end: every
// acknowledged message handled or dead-lettered as its kind says and
// nothing else dead-lettered, every delayed message delivered once, each
// broadcasting member given every acknowledged message, every message of
// the priority topic handled or dead-lettered by the batch group.
// EQUEUE_CRASH_ROUNDS sets the rounds (default 3).
func TestCrash_FeaturesKillAndReopen(t *testing.T) {
	rounds := crashRounds(t, 3)
	rng := crashRand(t)
	dir := t.TempDir()
	redoFile := filepath.Join(t.TempDir(), "redo")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := &crashFeatures{acked: map[string]crashPos{}, dues: map[string]time.Time{}, handled: map[string]bool{}, delivered: map[string]bool{}, bgot: map[string]map[string]bool{},
		prio: newCrashPrio()}
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	h.prio.reopened(t, ctx, e, "before round 0")
	h.prio.nextLife(t, ctx, e, "0")
	require.NoError(t, e.Close())
	for round := range rounds {
		h.runChild(t, dir, redoFile, round, rng)
		e := crashReopen(t, dir, round, nil)
		found := crashReadTopic(t, ctx, e, crashDedupTopic)
		for id, pos := range h.acked {
			require.Equal(t, []crashPos{pos}, found[id], "round %d: acknowledged %s must be stored exactly once where its first Send said", round, id)
		}
		capped := crashReadTopic(t, ctx, e, crashCappedTopic)
		// A kill leaves at most the one send in flight untrimmed.
		assert.LessOrEqual(t, len(capped), crashCapMax+1, "round %d: the capped topic holds more than its limit and the send in flight", round)
		h.checkChurn(t, ctx, e, round)
		t.Logf("round %d: %s", round, h.prio.summary())
		h.prio.reopened(t, ctx, e, fmt.Sprintf("round %d", round))
		h.prio.nextLife(t, ctx, e, strconv.Itoa(round+1))
		require.NoError(t, e.Close())
		// The next round sends these IDs again.
		var redo strings.Builder
		for id := range h.acked {
			fmt.Fprintln(&redo, id)
		}
		require.NoError(t, os.WriteFile(redoFile, []byte(redo.String()), 0o600))
		t.Logf("round %d: %d acknowledged (%d answered as duplicates so far), %d delayed, %d handled, %d generations of %s", round, len(h.acked), h.dups, len(h.dues), len(h.handled), h.churned, crashChurnTopic)
	}
	require.NotEmpty(t, h.acked)
	require.NotZero(t, h.dups, "no send was answered as a duplicate: the dedup check did not run")
	h.finish(t, ctx, dir)
}

const (
	crashDedupTopic  = "fdedup"
	crashDelayTopic  = "fdelay"
	crashCappedTopic = "fcapped"
	crashChurnTopic  = "fchurn"
	crashCapMax      = 20
	crashRetryGroup  = "fretry"
	crashDelayGroup  = "fdelayed"
	// crashBroadcastGroup's members are crashBroadcastMembers.
	crashBroadcastGroup = "fbroadcast"
	crashOrderlyGroup   = "forderly"
)

// crashKind is how the retrying group's handler treats a message.
func crashKind(id string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % 5) // 0: fails always, 1: fails once, else handled at once
}

// crashRetryOptions are the retrying group's options, in the child and
// in the parent's last run alike.
func crashRetryOptions(h equeue.Handler) equeue.ConsumerOptions {
	return equeue.ConsumerOptions{Group: crashRetryGroup, Subscriptions: []equeue.Subscription{{Topic: crashDedupTopic}},
		From: equeue.ConsumeFromEarliest, CommitInterval: 50 * time.Millisecond,
		RetryTopicDelays: []time.Duration{100 * time.Millisecond}, MaxAttempts: 2,
		LocalRetryDelay: 50 * time.Millisecond, SendBackRetryDelay: 100 * time.Millisecond,
		Handler: h}
}

func crashRetryHandler(say func(string, ...any)) equeue.Handler {
	return func(_ context.Context, m *equeue.Message) error {
		switch crashKind(m.ID) {
		case 0:
			return errors.New("fails always")
		case 1:
			if m.Attempt == 0 {
				return errors.New("fails once")
			}
		}
		say("HANDLED %s %d", m.ID, m.Attempt)
		return nil
	}
}

// crashConsumers are the child's consumers (and the parent's last run's):
// the retrying group, the delayed group, an orderly group and two members
// of a broadcasting group on the dedup topic, the second one slow by slow a message (in the
// children: it falls behind), so that their positions differ when the
// process is killed.
func crashConsumers(say func(string, ...any), slow time.Duration) []equeue.ConsumerOptions {
	out := []equeue.ConsumerOptions{crashRetryOptions(crashRetryHandler(say)), crashDelayOptions(crashDelayHandler(say))}
	for i, id := range crashBroadcastMembers {
		out = append(out, equeue.ConsumerOptions{Group: crashBroadcastGroup, ID: id, Model: equeue.Broadcasting, Concurrency: 1,
			Subscriptions: []equeue.Subscription{{Topic: crashDedupTopic}}, From: equeue.ConsumeFromEarliest, CommitInterval: 50 * time.Millisecond,
			Handler: func(_ context.Context, m *equeue.Message) error {
				if i == 1 {
					time.Sleep(slow)
				}
				say("BGOT %s %s", id, m.ID)
				return nil
			}})
	}
	// An orderly group: within one process life each queue's messages
	// reach it in offset order.
	out = append(out, equeue.ConsumerOptions{Group: crashOrderlyGroup, Orderly: true,
		Subscriptions: []equeue.Subscription{{Topic: crashDedupTopic}}, From: equeue.ConsumeFromEarliest, CommitInterval: 50 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error {
			say("OGOT %d %d", m.Queue, m.Offset)
			return nil
		}})
	return append(out, crashBatchOptions(say))
}

var crashBroadcastMembers = []string{"b1", "b2"}

func crashDelayOptions(h equeue.Handler) equeue.ConsumerOptions {
	return equeue.ConsumerOptions{Group: crashDelayGroup, Subscriptions: []equeue.Subscription{{Topic: crashDelayTopic}},
		From: equeue.ConsumeFromEarliest, CommitInterval: 50 * time.Millisecond, Handler: h}
}

func crashDelayHandler(say func(string, ...any)) equeue.Handler {
	return func(_ context.Context, m *equeue.Message) error {
		say("DGOT %s %d", m.ID, time.Now().UnixNano())
		return nil
	}
}

// TestCrashFeaturesChild is the child's workload; it does nothing unless
// started by TestCrash_FeaturesKillAndReopen.
func TestCrashFeaturesChild(t *testing.T) {
	dir := crashChildDir(t)
	round := strconv.Itoa(crashChildRound())
	ctx := context.Background()
	say := childSay()
	fail := func(format string, args ...any) {
		say("ERROR "+format, args...)
		os.Exit(3)
	}
	e, err := equeue.Open(dir, nil) // SyncAlways
	if err != nil {
		fail("open %v", err)
	}
	for name, o := range map[string]equeue.TopicOptions{
		crashDedupTopic:  {Queues: 4, DedupWindow: time.Hour},
		crashDelayTopic:  {Queues: 2},
		crashCappedTopic: {Queues: 2, Limits: equeue.TopicLimits{MaxMessages: crashCapMax}},
		crashPrioTopic:   crashPrioOptions,
	} {
		if err := e.CreateTopicWith(ctx, name, o); err != nil && !errors.Is(err, equeue.ErrTopicExists) {
			fail("create %s: %v", name, err)
		}
	}
	for _, o := range crashConsumers(say, 2*time.Millisecond) {
		c, err := equeue.NewConsumer(e, o)
		if err == nil {
			err = c.Start(ctx)
		}
		if err != nil {
			fail("consumer %s: %v", o.Group, err)
		}
	}
	p, err := equeue.NewProducer(e, nil)
	if err != nil {
		fail("producer %v", err)
	}
	var redo []string
	if b, err := os.ReadFile(os.Getenv("EQUEUE_CRASH_REDO")); err == nil {
		redo = strings.Fields(string(b))
	}
	say("READY")
	// Sends again what earlier rounds acknowledged, a few at a time.
	go func() {
		for i, id := range redo {
			r, err := p.Send(ctx, &equeue.Message{Topic: crashDedupTopic, ID: id, Body: []byte(id)})
			if err != nil {
				fail("send again %s: %v", id, err)
			}
			say("DUP %s %d %d %t", id, r.Queue, r.Offset, r.Duplicate)
			if i%8 == 7 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	for g := range 3 {
		go func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("r%s-g%d-%d", round, g, i)
				r, err := p.Send(ctx, &equeue.Message{Topic: crashDedupTopic, ID: id, Keys: []string{strconv.Itoa(i % 5)}, Body: []byte(id)})
				if err != nil {
					fail("send %v", err)
				}
				say("ACK %s %d %d", id, r.Queue, r.Offset)
				if i%10 == 0 {
					did := "d" + id
					due := time.Now().Add(time.Duration(100+rand.IntN(600)) * time.Millisecond)
					if _, err := p.Send(ctx, &equeue.Message{Topic: crashDelayTopic, ID: did, Body: []byte(did), DeliverAt: due}); err != nil {
						fail("send delayed %v", err)
					}
					say("DACK %s %d", did, due.UnixNano())
				}
				if g == 0 {
					if _, err := p.Send(ctx, &equeue.Message{Topic: crashCappedTopic, Body: []byte(id)}); err != nil {
						fail("send capped %v", err)
					}
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	// SendAsync into the dedup topic, up to 16 in flight, acknowledged by
	// each future in order.
	type inflight struct {
		id string
		f  *equeue.SendFuture
	}
	futures := make(chan inflight, 16)
	go func() {
		for x := range futures {
			r, err := x.f.Result(ctx)
			if err != nil {
				fail("send async %s: %v", x.id, err)
			}
			say("ACK %s %d %d", x.id, r.Queue, r.Offset)
		}
	}()
	go func() {
		for i := 0; ; i++ {
			id := fmt.Sprintf("r%s-async-%d", round, i)
			futures <- inflight{id, p.SendAsync(ctx, &equeue.Message{Topic: crashDedupTopic, ID: id, Body: []byte(id)})}
			if i%16 == 15 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	go crashChurn(ctx, e, p, round, say, fail)
	go crashPrioSender(ctx, p, round, say, fail)
	go crashCommitReporter(ctx, e, say)
	select {}
}

// crashChurn creates crashChurnTopic, sends to it and deletes it, again
// and again: generation n's messages have bodies "n-i".
func crashChurn(ctx context.Context, e *equeue.Engine, p *equeue.Producer, round string, say, fail func(string, ...any)) {
	if err := e.DeleteTopic(ctx, crashChurnTopic); err != nil && !errors.Is(err, equeue.ErrTopicNotFound) {
		fail("delete %s left by the last round: %v", crashChurnTopic, err)
	}
	r, _ := strconv.Atoi(round)
	for n := r * 10000; ; n++ {
		if err := e.CreateTopic(ctx, crashChurnTopic, 2); err != nil {
			fail("create %s: %v", crashChurnTopic, err)
		}
		say("CREATED %d", n)
		for i := range 10 {
			body := fmt.Sprintf("%d-%d", n, i)
			if _, err := p.Send(ctx, &equeue.Message{Topic: crashChurnTopic, ID: body, Body: []byte(body)}); err != nil {
				fail("send to %s: %v", crashChurnTopic, err)
			}
			say("SENT %s", body)
		}
		if err := e.DeleteTopic(ctx, crashChurnTopic); err != nil {
			fail("delete %s: %v", crashChurnTopic, err)
		}
		say("DELETED %d", n)
	}
}

// crashFeatures is what the parent learned from the children.
type crashFeatures struct {
	acked     map[string]crashPos        // dedup topic: ID → where its first Send said
	dues      map[string]time.Time       // delayed: ID → DeliverAt
	handled   map[string]bool            // the retrying group handled it
	delivered map[string]bool            // the delayed group got it
	bgot      map[string]map[string]bool // broadcasting member → IDs it got
	dups      int                        // sends again answered as duplicates
	// The churned topic's last generation created, whether its deletion
	// returned, and its acknowledged sends.
	churn        string
	churnDeleted bool
	churnSent    []string
	churned      int // generations created
	// orderly is the last offset of each queue the orderly group got in
	// the current process.
	orderly map[int]int64
	// prio is the priority topic's and the batch group's part.
	prio *crashPrio
}

// line takes one line of a child's output (or of the parent's last run).
func (h *crashFeatures) line(l string) error {
	f := strings.Fields(l)
	if ok, err := h.prio.line(f); ok {
		return err
	}
	switch {
	case len(f) == 4 && f[0] == "ACK":
		q, _ := strconv.Atoi(f[2])
		off, _ := strconv.ParseInt(f[3], 10, 64)
		h.acked[f[1]] = crashPos{q, off}
	case len(f) == 5 && f[0] == "DUP":
		q, _ := strconv.Atoi(f[2])
		off, _ := strconv.ParseInt(f[3], 10, 64)
		pos, ok := h.acked[f[1]]
		if !ok {
			return fmt.Errorf("%s was sent again but never acknowledged", f[1])
		}
		if f[4] != "true" || (crashPos{q, off}) != pos {
			return fmt.Errorf("%s sent again: answered duplicate=%s at %d/%d, first stored at %d/%d", f[1], f[4], q, off, pos.queue, pos.offset)
		}
		h.dups++
	case len(f) == 3 && f[0] == "DACK":
		ns, _ := strconv.ParseInt(f[2], 10, 64)
		h.dues[f[1]] = time.Unix(0, ns)
	case len(f) == 3 && f[0] == "HANDLED":
		h.handled[f[1]] = true
	case len(f) == 3 && f[0] == "OGOT":
		q, _ := strconv.Atoi(f[1])
		off, _ := strconv.ParseInt(f[2], 10, 64)
		if last, ok := h.orderly[q]; ok && off <= last {
			return fmt.Errorf("the orderly group got %d/%d after %d/%d", q, off, q, last)
		}
		h.orderly[q] = off
	case len(f) == 3 && f[0] == "BGOT":
		if h.bgot[f[1]] == nil {
			h.bgot[f[1]] = map[string]bool{}
		}
		h.bgot[f[1]][f[2]] = true
	case len(f) == 3 && f[0] == "DGOT":
		ns, _ := strconv.ParseInt(f[2], 10, 64)
		due, ok := h.dues[f[1]]
		if ok && time.Unix(0, ns).Before(due) {
			return fmt.Errorf("delayed %s delivered %v early", f[1], due.Sub(time.Unix(0, ns)))
		}
		h.delivered[f[1]] = true
	case len(f) == 2 && f[0] == "CREATED":
		h.churn, h.churnDeleted, h.churnSent = f[1], false, nil
		h.churned++
	case len(f) == 2 && f[0] == "SENT":
		h.churnSent = append(h.churnSent, f[1])
	case len(f) == 2 && f[0] == "DELETED":
		h.churnDeleted = true
	case strings.HasPrefix(l, "ERROR"):
		return errors.New(l)
	}
	return nil
}

// runChild runs one round's child and kills it at a random moment.
func (h *crashFeatures) runChild(t *testing.T, dir, redoFile string, round int, rng *rand.Rand) {
	h.orderly = map[int]int64{}
	c := startCrashChild(t, crashChildSpec{Test: "TestCrashFeaturesChild", Dir: dir, Round: round,
		Env: []string{"EQUEUE_CRASH_REDO=" + redoFile}, Line: h.line})
	c.awaitReady()
	c.killAtRandom(rng, 300*time.Millisecond, 900*time.Millisecond)
}

// finish runs both groups in the parent until everything acknowledged is
// accounted for, and checks the dead letters and the delayed topic.
func (h *crashFeatures) finish(t *testing.T, ctx context.Context, dir string) {
	h.orderly = map[int]int64{}
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	defer e.Close()
	var (
		mu       sync.Mutex
		lineErrs []error
	)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if err := h.line(fmt.Sprintf(format, args...)); err != nil {
			lineErrs = appendFirst(lineErrs, err)
		}
	}
	var consumers []*equeue.Consumer
	for _, o := range crashConsumers(say, 0) {
		c, err := equeue.NewConsumer(e, o)
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		consumers = append(consumers, c)
	}
	// missing lists what is not accounted for yet, a few of each.
	var dl, bdl map[string]int
	missing := func() []string {
		dl = crashDeadLetters(t, ctx, e, crashRetryGroup)
		bdl = crashDeadLetters(t, ctx, e, crashBatchGroup)
		mu.Lock()
		defer mu.Unlock()
		var out []string
		note := func(what, id string) {
			if len(out) < 10 {
				out = append(out, what+" "+id)
			}
		}
		for id := range h.acked {
			switch {
			case crashKind(id) == 0 && dl[id] == 0:
				note("not dead-lettered:", id)
			case crashKind(id) != 0 && !h.handled[id]:
				note("not handled:", id)
			}
			for _, b := range crashBroadcastMembers {
				if !h.bgot[b][id] {
					note("not broadcast to "+b+":", id)
				}
			}
		}
		for id := range h.dues {
			if !h.delivered[id] {
				note("delayed, not delivered:", id)
			}
		}
		h.prio.missing(bdl, note)
		return out
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		m := missing()
		if len(m) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acknowledged messages lost after the kills (first ten): %v", m)
		}
	}
	for _, c := range consumers {
		require.NoError(t, c.Close())
	}
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, lineErrs)
	for id, n := range dl {
		require.Zero(t, crashKind(id), "%s dead-lettered, but its handler does not always fail", id)
		// A kill between a send-back and the commit that passes it
		// delivers the message again, and it fails again: its send-back
		// mark answers the second send-back (sendbackmark.go).
		assert.Equal(t, 1, n, "%s dead-lettered %d times", id, n)
	}
	for id, n := range bdl {
		require.Zero(t, crashKind(id), "%s dead-lettered by %s, but its batch handler does not always fail it", id, crashBatchGroup)
		assert.Equal(t, 1, n, "%s dead-lettered %d times by %s", id, n, crashBatchGroup)
	}
	for id, ids := range crashReadTopic(t, ctx, e, crashDelayTopic) {
		if _, ok := h.dues[id]; ok {
			assert.Len(t, ids, 1, "delayed %s stored once", id)
		}
	}
	t.Logf("%d acknowledged (%d answered again as duplicates), %d handled, %d dead-lettered, %d delayed delivered, %d and %d broadcast, %d generations of %s",
		len(h.acked), h.dups, len(h.handled), len(dl), len(h.delivered), len(h.bgot["b1"]), len(h.bgot["b2"]), h.churned, crashChurnTopic)
	t.Logf("%s, %d dead-lettered by %s", h.prio.summary(), len(bdl), crashBatchGroup)
	require.NotEmpty(t, h.prio.got, "no message of the backlog in %s was handed out: the lane order went unchecked", crashPrioTopic)
}

// checkChurn checks the churned topic after a kill: if it exists, it
// holds the acknowledged sends of the last generation created, unless
// that generation's deletion returned, and nothing of any other
// generation (a generation created but not yet reported has sent
// nothing); it is gone only if that generation's deletion may have
// started.
func (h *crashFeatures) checkChurn(t *testing.T, ctx context.Context, e *equeue.Engine, round int) {
	_, err := e.Topic(ctx, crashChurnTopic)
	if errors.Is(err, equeue.ErrTopicNotFound) {
		// Its deletion may have been under way if its last send returned
		// (reported or not).
		require.True(t, h.churnDeleted || h.churn == "" || len(h.churnSent) >= 9,
			"round %d: generation %s of %s was created, %d of its sends acknowledged, and it is gone", round, h.churn, crashChurnTopic, len(h.churnSent))
		return
	}
	require.NoError(t, err)
	found := crashReadTopic(t, ctx, e, crashChurnTopic)
	if h.churnDeleted {
		require.Empty(t, found, "round %d: %s holds messages after generation %s was deleted", round, crashChurnTopic, h.churn)
		return
	}
	for id := range found {
		gen, _, _ := strings.Cut(id, "-")
		require.Equal(t, h.churn, gen, "round %d: %s holds %s, of another generation than %s", round, crashChurnTopic, id, h.churn)
	}
	for _, id := range h.churnSent {
		require.Len(t, found[id], 1, "round %d: acknowledged %s stored once in %s", round, id, crashChurnTopic)
	}
}

// crashReadTopic reads every stored message of topic, by ID, checking
// that its queues have no gaps and no corrupt records.
func crashReadTopic(t *testing.T, ctx context.Context, e *equeue.Engine, topic string) map[string][]crashPos {
	info, err := e.Topic(ctx, topic)
	require.NoError(t, err)
	found := map[string][]crashPos{}
	for _, q := range info.Queues {
		next := q.MinOffset
		for next < q.MaxOffset {
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: q.ID, Offset: next, Max: 1024})
			require.NoError(t, err)
			require.Empty(t, res.Corrupt, "%s: corrupt records", topic)
			for _, m := range res.Messages {
				require.Equal(t, next, m.Offset, "%s: queue %d has a gap at %d", topic, q.ID, next)
				next++
				found[m.ID] = append(found[m.ID], crashPos{q.ID, m.Offset})
			}
			require.Equal(t, next, res.NextOffset)
		}
	}
	return found
}

// appendFirst keeps the first ten errors and counts the rest in the
// eleventh.
func appendFirst(errs []error, err error) []error {
	switch {
	case len(errs) < 10:
		return append(errs, err)
	case len(errs) == 10:
		return append(errs, errors.New("and more"))
	}
	return errs
}

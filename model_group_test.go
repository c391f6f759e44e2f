package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
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
// after MaxAttempts failed attempts, and once more for each of its dead
// letters redriven. Orderly groups also keep each key's order. Admin
// operations run on the live group too: ResetOffsets (to the earliest or
// latest message, or a time), DeleteGroup (refused with members, or
// forced) and Redrive of dead letters; a message they touch is owed what
// the README promises after them (groupLifeOwed) instead of exact counts. Histories with crashed members (stopped as a killed process
// would be) check the at-least-once promise instead: every message is
// handled successfully at least once, or dead-lettered at least once
// after at least MaxAttempts failed attempts. So do the histories whose
// store fails writes and fsyncs now and then: there, each send's answer
// says "stored", "not stored" or "unknown", and a message answered "not
// stored" must never reach a handler or the dead-letter topic.
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
		for round := 0; round < rounds; round++ {
			for i, mode := range groupLifeModes {
				seed := fixedSeed
				if seed == 0 {
					seed = uint64(time.Now().UnixNano())
				}
				if !soak {
					// The default run tries one history per transport, of
					// the mode its seed picks.
					if i > 0 {
						break
					}
					mode = groupLifeModes[seed%uint64(len(groupLifeModes))]
				}
				t.Run(fmt.Sprintf("%s/%s/seed=%d", tr, mode, seed), func(t *testing.T) {
					clusterSuiteOnly(t, tr)
					runGroupLife(t, tr, mode, false, seed)
				})
				if tr == clusterTransport {
					continue // the faulty store is a single engine's
				}
				t.Run(fmt.Sprintf("%s/%s/faults/seed=%d", tr, mode, seed), func(t *testing.T) {
					runGroupLife(t, tr, mode, true, seed)
				})
			}
		}
	}
}

// groupLifeModes are the consumer modes of the model's group.
var groupLifeModes = []string{"concurrent", "orderly", "batch", "orderly-batch", "broadcast", "broadcast-orderly"}

// groupLifeAttempts is the MaxAttempts of the model's group.
const groupLifeAttempts = 3

// groupLifeFate is how message n behaves: it fails always, once, or never.
func groupLifeFate(n int) (alwaysFails, failsOnce bool) {
	return n%7 == 3, n%4 == 1
}

// groupLifeLog records what the group's handlers saw, by receiver and
// message number. The receiver is the group itself ("") in a clustering
// group, whose members share the messages, and each member's ID in a
// broadcasting one, where every member receives every message.
type groupLifeLog struct {
	mu   sync.Mutex
	seen map[string]*groupLifeSeen
}

// groupLifeSeen is what one receiver saw.
type groupLifeSeen struct {
	successes map[int]int
	failures  map[int]int
	byKey     map[string][]int // first successes per key, in order
}

// of returns what receiver who saw; l.mu must be held.
func (l *groupLifeLog) of(who string) *groupLifeSeen {
	s, ok := l.seen[who]
	if !ok {
		s = &groupLifeSeen{successes: map[int]int{}, failures: map[int]int{}, byKey: map[string][]int{}}
		l.seen[who] = s
	}
	return s
}

// handler is receiver who's handler.
func (l *groupLifeLog) handler(who string) equeue.Handler {
	return func(ctx context.Context, m *equeue.Message) error {
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
		s := l.of(who)
		if always || (once && s.failures[n] == 0) {
			s.failures[n]++
			return fmt.Errorf("message %d fails", n)
		}
		s.successes[n]++
		if s.successes[n] == 1 && len(m.Keys) > 0 {
			s.byKey[m.Keys[0]] = append(s.byKey[m.Keys[0]], n)
		}
		return nil
	}
}

// batchHandler handles a batch message by message, failing those that
// receiver who's handler fails. An orderly batch is handled again from its
// first failed message on, so in orderly mode it stops there.
func (l *groupLifeLog) batchHandler(who string, orderly bool) equeue.BatchHandler {
	h := l.handler(who)
	return func(ctx context.Context, msgs []*equeue.Message) error {
		failed := map[int]error{}
		for i, m := range msgs {
			if err := h(ctx, m); err != nil {
				failed[i] = err
				if orderly {
					break
				}
			}
		}
		if len(failed) == 0 {
			return nil
		}
		return &equeue.BatchError{Failed: failed}
	}
}

// settled reports whether every message stored has had at each receiver
// of whos the deliveries it is owed.
func (l *groupLifeLog) settled(owed map[int]*groupLifeOwed, whos []string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, who := range whos {
		s := l.of(who)
		for n, o := range owed {
			if !o.done(n, who, s) {
				return false
			}
		}
	}
	return true
}

// counts returns a copy of the successes and failures seen.
func (l *groupLifeLog) counts() map[string]*groupLifeSeen {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]*groupLifeSeen, len(l.seen))
	for who, s := range l.seen {
		out[who] = &groupLifeSeen{successes: maps.Clone(s.successes), failures: maps.Clone(s.failures)}
	}
	return out
}

// unsettled describes the messages not settled by settled's measure.
func (l *groupLifeLog) unsettled(owed map[int]*groupLifeOwed, whos []string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, who := range whos {
		s := l.of(who)
		for n, o := range owed {
			if !o.done(n, who, s) {
				out = append(out, fmt.Sprintf("%d at %q (%d successes, %d failures, owed %+v)", n, who, s.successes[n], s.failures[n], *o))
			}
		}
	}
	return strings.Join(out, "; ")
}

// openFaultyRestartable is openOverRestartable on a Badger store wrapped
// in a faultstore: it returns the engine, its broker, a function giving the
// current faulty store and the restart function.
func openFaultyRestartable(t *testing.T, transport string, opts *equeue.Options) (*equeue.Engine, equeue.Broker, func() *faultstore.FS, func() (*equeue.Engine, equeue.Broker)) {
	dir := t.TempDir()
	var (
		mu  sync.Mutex
		fs  *faultstore.FS
		cur *equeue.Engine
	)
	open := func() (*equeue.Engine, equeue.Broker) {
		bo := store.DefaultBadgerOptions()
		s, err := store.OpenBadger(dir, &bo)
		require.NoError(t, err)
		o := *opts
		o.Store = faultstore.New(s)
		e, err := equeue.Open("", &o)
		require.NoError(t, err)
		mu.Lock()
		fs, cur = o.Store.(*faultstore.FS), e
		mu.Unlock()
		return e, brokerOver(t, e, transport)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		_ = cur.Close()
	})
	e, b := open()
	return e, b, func() *faultstore.FS { mu.Lock(); defer mu.Unlock(); return fs }, func() (*equeue.Engine, equeue.Broker) {
		mu.Lock()
		old := cur
		mu.Unlock()
		_ = old.Close() // after a failed fsync, Close reports it
		return open()
	}
}

func runGroupLife(t *testing.T, transport, mode string, faults bool, seed uint64) {
	orderly, broadcast := strings.Contains(mode, "orderly"), strings.HasPrefix(mode, "broadcast")
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ctx := ctxT(t)
	opened := &equeue.Options{SessionTimeout: time.Second}
	var (
		e       *equeue.Engine
		b       equeue.Broker
		restart func() (*equeue.Engine, equeue.Broker)
		faulty  func() *faultstore.FS
	)
	if faults {
		e, b, faulty, restart = openFaultyRestartable(t, transport, opened)
	} else {
		e, b, restart = openOverRestartable(t, transport, opened)
	}
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	log := &groupLifeLog{seen: map[string]*groupLifeSeen{}}
	receiver := func(id string) string {
		if broadcast {
			return id
		}
		return ""
	}
	opts := func(id string) equeue.ConsumerOptions {
		o := equeue.ConsumerOptions{
			Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			Handler: log.handler(receiver(id)), Orderly: orderly, Concurrency: 4,
			MaxAttempts: groupLifeAttempts, RetryTopicDelays: []time.Duration{20 * time.Millisecond},
			LocalRetryDelay: 10 * time.Millisecond, CommitInterval: 30 * time.Millisecond,
		}
		if broadcast {
			o.Model = equeue.Broadcasting
		}
		if strings.HasSuffix(mode, "batch") {
			o.Handler, o.BatchHandler, o.BatchSize = nil, log.batchHandler(receiver(id), orderly), 4
		}
		return o
	}
	p, err := equeue.NewProducer(b, nil)
	require.NoError(t, err)
	members := map[string]*equeue.Consumer{}
	// A crashed member's ID stays taken until its session expires: its
	// slot starts again under a new incarnation's ID.
	incarnation := map[string]int{}
	memberID := func(slot string) string { return fmt.Sprintf("%s.%d", slot, incarnation[slot]) }
	everStarted := map[string]bool{} // member IDs
	// gone is set while the group may not exist: before its first member
	// started, or deleted and no member started since.
	gone := true
	start := func(id string) {
		everStarted[memberID(id)] = true
		gone = false
		c, err := equeue.NewConsumer(b, withHeartbeat(opts(memberID(id))))
		require.NoError(t, err)
		err = c.Start(ctx)
		if faults && err != nil {
			// Joining writes the group's state: a failing store refuses it.
			t.Logf("start %s: %v", id, err)
			return
		} else {
			require.NoError(t, err, "start %s", id)
		}
		members[id] = c
	}
	crashed := false
	// removed holds the members running when DeleteGroup removed them
	// (Force): the final commit of their Close may be refused, as they are
	// no members (unless they joined the new group since).
	removed := map[string]bool{}
	stop := func(id string) {
		err := members[id].Close()
		if removed[id] && (errors.Is(err, equeue.ErrNotMember) || errors.Is(err, equeue.ErrGroupNotFound)) {
			err = nil
		}
		if !faults {
			require.NoError(t, err, "close %s", id)
		}
		delete(members, id)
		delete(removed, id)
	}
	defer func() {
		for id := range members {
			stop(id)
		}
		_ = p.Close()
	}()
	// Each send's answer: stored, not stored (lost), or neither (unknown).
	// owed holds what the group owes each stored message (the model of the
	// admin operations).
	sent, stored, lost, owed := 0, map[int]bool{}, map[int]bool{}, map[int]*groupLifeOwed{}
	send := func(k int, delay time.Duration) {
		for i := 0; i < k; i++ {
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"k" + strconv.Itoa(sent%5)}, Body: []byte(strconv.Itoa(sent)), Delay: delay})
			switch {
			case err == nil:
				stored[sent], owed[sent] = true, newGroupLifeOwed()
			case faults && errors.Is(err, equeue.ErrIndeterminate):
			case faults:
				lost[sent] = true
			default:
				require.NoError(t, err, "send %d", sent)
			}
			sent++
		}
	}
	reopen := func() {
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
	}
	queues := 4
	settle := func() {
		if faults {
			faulty().FailWrites(0)
			faulty().FailSyncs(0)
			if e.StoreFailure() != nil {
				reopen()
			}
		}
		if len(members) == 0 {
			start("c0")
		}
		whos := []string{""}
		if broadcast {
			whos = whos[:0]
			for slot := range members {
				whos = append(whos, memberID(slot))
			}
		}
		for deadline := time.Now().Add(30 * time.Second); !log.settled(owed, whos); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out after 30s: seed %d: %d messages not all handled by %q: %s", seed, len(stored), whos, log.unsettled(owed, whos))
			}
		}
	}
	// rebase makes every message stored inexact, owed again when
	// promised(n) says so, its base the counts seen and the dead letters
	// taken before the operation (a delivery that came after it, while it
	// returned, is one it owes).
	rebase := func(seen map[string]*groupLifeSeen, dead map[int]int, promised func(n int) bool) {
		for n, o := range owed {
			o.rebase(n, promised(n), seen, dead)
		}
	}
	every := func(int) bool { return true }
	none := func(int) bool { return false }
	var marks []groupLifeMark // one for each step, as it began
	resetOffsets := func() string {
		req, promised, what := equeue.ResetRequest{To: equeue.ResetToEarliest}, every, "earliest"
		switch rng.IntN(3) {
		case 1:
			req.To, promised, what = equeue.ResetToLatest, none, "latest"
		case 2:
			m := marks[rng.IntN(len(marks))]
			req.To, req.Time = equeue.ResetToTime, m.at
			promised, what = func(n int) bool { return n >= m.sent }, fmt.Sprintf("the time of message %d", m.sent)
		}
		seen, dead := log.counts(), deadLetterCounts(t, e, "g")
		err := e.ResetOffsets(ctx, "g", req)
		switch {
		case err == nil:
			rebase(seen, dead, promised)
		case gone && errors.Is(err, equeue.ErrGroupNotFound):
			return "reset to " + what + ": no group"
		case faults:
			// It may have moved the offsets or not: a reset to the earliest
			// owes what was owed before either way.
			if req.To != equeue.ResetToEarliest {
				rebase(seen, dead, none)
			}
			return fmt.Sprintf("reset to %s: %v", what, err)
		default:
			require.NoError(t, err, "seed %d: reset to %s", seed, what)
		}
		return "reset to " + what
	}
	deleteGroup := func() string {
		force := rng.IntN(2) == 0
		what := fmt.Sprintf("delete group (%d members, force %t)", len(members), force)
		// The group's dead letters go with it: their counts start at 0.
		seen := log.counts()
		err := e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: force})
		switch {
		case err == nil:
			if !force && !faults {
				require.Empty(t, members, "seed %d: the group was deleted with live members", seed)
			}
			for id := range members {
				removed[id] = true
			}
			rebase(seen, nil, every)
			gone = true
		case !force && errors.Is(err, equeue.ErrGroupHasMembers):
			if !faults && !crashed {
				require.NotEmpty(t, members, "seed %d: delete group: %v", seed, err)
			}
			return what + ": has members"
		case gone && errors.Is(err, equeue.ErrGroupNotFound):
			return what + ": no group"
		case faults:
			// Cut short: resumable, not atomic. Part of it may be gone.
			rebase(seen, nil, none)
			gone = true
			return fmt.Sprintf("%s: %v", what, err)
		default:
			require.NoError(t, err, "seed %d: %s", seed, what)
		}
		return what
	}
	redrive := func() string {
		var offsets []int64
		numbers := map[int64]int{}
		for _, d := range listDeadLetters(t, e, "g") {
			if !d.Redriven && (len(offsets) == 0 || rng.IntN(3) > 0) {
				offsets = append(offsets, d.Offset)
				numbers[d.Offset] = deadLetterNumber(t, d)
			}
		}
		if len(offsets) == 0 {
			return "redrive: no dead letters"
		}
		// The README: a group whose members do not consume its retry topic
		// (a broadcasting or orderly one) can be redriven only to the
		// topic, and without it the redrive is refused.
		toTopic := orderly || broadcast || rng.IntN(2) == 0
		if (orderly || broadcast) && !faults {
			_, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: offsets})
			require.ErrorIs(t, err, equeue.ErrInvalidArgument, "seed %d: redrive of a %s group to its retry topic", seed, mode)
		}
		what := fmt.Sprintf("redrive %d (to topic %t)", len(offsets), toTopic)
		n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: offsets, ToTopic: toTopic})
		switch {
		case err == nil:
			require.Equal(t, len(offsets), n, "seed %d: %s", seed, what)
		case gone && !toTopic && errors.Is(err, equeue.ErrInvalidArgument):
			return what + ": no group"
		case faults:
			what = fmt.Sprintf("%s: %d sent, %v", what, n, err)
		default:
			require.NoError(t, err, "seed %d: %s", seed, what)
		}
		// Redrive sends them in offset order: the first n were sent.
		for _, off := range offsets[:n] {
			if o, ok := owed[numbers[off]]; ok {
				o.redrives++
			}
		}
		return what
	}
	ids := []string{"c0", "c1", "c2"}
	steps := 12 + rng.IntN(12)
	var history []string
	defer func() {
		if t.Failed() {
			t.Logf("seed %d: history %v", seed, history)
		}
	}()
	for step := 0; step < steps; step++ {
		marks = append(marks, groupLifeMark{at: time.Now(), sent: sent})
		id := ids[rng.IntN(len(ids))]
		switch op := rng.IntN(15); {
		case faults && op < 2 && rng.IntN(2) == 0:
			if rng.IntN(3) == 0 {
				history = append(history, "fail a sync")
				faulty().FailSyncs(1)
			} else {
				k := 1 + rng.IntN(3)
				history = append(history, fmt.Sprintf("fail %d writes", k))
				faulty().FailWrites(k)
			}
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
			if err := e.AddQueues(ctx, "t", 1); !faults {
				require.NoError(t, err)
			} else if err != nil {
				queues--
			}
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
			reopen()
		case op < 10:
			history = append(history, "settle")
			settle()
		case op == 12:
			history = append(history, resetOffsets())
		case op == 13:
			history = append(history, deleteGroup())
		case op == 14:
			history = append(history, redrive())
		default:
			d := time.Duration(rng.IntN(30)) * time.Millisecond
			history = append(history, "wait "+d.String())
			time.Sleep(d)
		}
	}
	if broadcast {
		// Every member catches up: each is checked.
		for _, id := range ids {
			if _, on := members[id]; !on {
				start(id)
			}
		}
	}
	settle()
	t.Logf("seed %d: %d messages (%d not stored, %d unknown), history %v", seed, sent, len(lost), sent-len(stored)-len(lost), history)
	whos := []string{""}
	if broadcast {
		whos = whos[:0]
		for slot := range members {
			whos = append(whos, memberID(slot))
		}
	}
	// Every message that always fails has its dead letters (one for each
	// receiver and delivery owed) before the counts are checked.
	deadOwed := map[int]int{}
	for n, o := range owed {
		if always, _ := groupLifeFate(n); always {
			deadOwed[n] = o.deadBase + len(whos)*o.copies()
		}
	}
	eventually(t, 30*time.Second, func() bool {
		dead := deadLetterCounts(t, e, "g")
		for n, want := range deadOwed {
			if dead[n] < want {
				return false
			}
		}
		return true
	}, "seed %d: dead letters expected: %v", seed, deadOwed)
	// Let a late duplicate or an extra retry show up before checking.
	time.Sleep(100 * time.Millisecond)
	dead := deadLetterCounts(t, e, "g")
	log.mu.Lock()
	defer log.mu.Unlock()
	weak := crashed || faults
	for n := range lost {
		for who, s := range log.seen {
			require.Zero(t, s.successes[n]+s.failures[n], "seed %d: message %d was answered not stored, %q handled it", seed, n, who)
		}
		require.Zero(t, dead[n], "seed %d: message %d was answered not stored, and dead-lettered", seed, n)
	}
	for _, who := range whos {
		s := log.of(who)
		for n, o := range owed {
			always, once := groupLifeFate(n)
			copies := o.copies()
			switch {
			case always && (weak || !o.exact):
				require.Equal(t, 0, s.successes[n], "seed %d: message %d always fails (%q)", seed, n, who)
				require.GreaterOrEqual(t, s.failures[n], o.base[who]+groupLifeAttempts*copies, "seed %d: attempts of message %d (%q)", seed, n, who)
				require.GreaterOrEqual(t, dead[n], o.deadBase+len(whos)*copies, "seed %d: dead letters of message %d", seed, n)
			case weak || !o.exact:
				if o.promised {
					require.Greater(t, s.successes[n], o.base[who], "seed %d: successes of message %d (%q)", seed, n, who)
				}
			case always:
				require.Equal(t, 0, s.successes[n], "seed %d: message %d always fails (%q)", seed, n, who)
				require.Equal(t, groupLifeAttempts*copies, s.failures[n], "seed %d: attempts of message %d (%q), %d times redriven", seed, n, who, o.redrives)
				require.Equal(t, len(whos)*copies, dead[n], "seed %d: dead letters of message %d: one per receiver and delivery, %d times redriven", seed, n, o.redrives)
			default:
				require.Equal(t, 1, s.successes[n], "seed %d: successes of message %d (%q)", seed, n, who)
				wantFailures := 0
				if once {
					wantFailures = 1
				}
				require.Equal(t, wantFailures, s.failures[n], "seed %d: failures of message %d (%q)", seed, n, who)
				require.Zero(t, dead[n], "seed %d: message %d dead-lettered", seed, n)
			}
		}
		if orderly && !weak {
			// A message an admin operation touched may come again after
			// later ones (a reset to the latest message skipped it, a
			// deletion brought it back): the order is the untouched ones'.
			for key, got := range s.byKey {
				got = slices.DeleteFunc(slices.Clone(got), func(n int) bool { o, ok := owed[n]; return !ok || !o.exact })
				require.IsIncreasing(t, got, "seed %d: order of key %s (%q)", seed, key, who)
			}
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
	for _, d := range listDeadLetters(t, e, group) {
		out[deadLetterNumber(t, d)]++
	}
	return out
}

package equeue_test

import (
	"context"
	"errors"
	"fmt"
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
)

// orderModelRoundsEnv sets how many random histories
// TestOrderly_RandomHistoryKeepsEachKeysOrder runs per transport (a soak,
// for example EQUEUE_ORDER_MODEL_ROUNDS=50). Without it each transport
// runs one short history (a few seconds).
const orderModelRoundsEnv = "EQUEUE_ORDER_MODEL_ROUNDS"

// orderModelSeedEnv replays one history: the seed a failure printed.
const orderModelSeedEnv = "EQUEUE_ORDER_MODEL_SEED"

// TestOrderly_RandomHistoryKeepsEachKeysOrder checks the README's ordering
// promise on random histories of one orderly group, in process and over
// remote: several producers send numbered sequences of their own keys
// while members start, stop cleanly, crash (no commit, no leave), are cut
// off from the engine for a while (a partition: long enough, the engine
// expires them and moves their queues while they still hold what they
// pulled), and the engine is closed and reopened (with its members stopped first, or
// closed under them); handlers fail at random (in place, some asking for
// a later retry, some panicking). Whatever the history, for every key the
// handler never sees message n before message n-1 of the key was handled
// successfully (a redelivery after a crash goes back, never ahead), never
// runs two messages of the key at once, and in the end every message sent
// was handled successfully.
func TestOrderly_RandomHistoryKeepsEachKeysOrder(t *testing.T) {
	rounds := 1
	if v := os.Getenv(orderModelRoundsEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, orderModelRoundsEnv)
		rounds = n
	}
	var fixedSeed uint64
	if v := os.Getenv(orderModelSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, orderModelSeedEnv)
		fixedSeed, rounds = n, 1
	}
	for _, tr := range transports {
		for round := 0; round < rounds; round++ {
			seed := fixedSeed
			if seed == 0 {
				seed = uint64(time.Now().UnixNano())
			}
			t.Run(fmt.Sprintf("%s/seed=%d", tr, seed), func(t *testing.T) {
				clusterSuiteOnly(t, tr)
				runOrderHistory(t, tr, seed)
			})
		}
	}
}

// orderLog records, per key, what the handlers of an orderly group saw,
// and every breach of the ordering promise.
type orderLog struct {
	mu       sync.Mutex
	rng      *rand.Rand
	handled  map[string]map[int]int // key -> message number -> successes
	running  map[string]int         // key -> handler calls running
	trail    map[string][]string    // key -> the last handler events, for the failure message
	breaches []string
}

func newOrderLog(seed uint64) *orderLog {
	return &orderLog{rng: rand.New(rand.NewPCG(seed, 7)), handled: map[string]map[int]int{},
		running: map[string]int{}, trail: map[string][]string{}}
}

// note appends an event to key's trail; l.mu must be held.
func (l *orderLog) note(key, ev string) {
	tr := append(l.trail[key], ev)
	if len(tr) > 40 {
		tr = tr[len(tr)-40:]
	}
	l.trail[key] = tr
}

// breach records a broken promise with key's trail; l.mu must be held.
func (l *orderLog) breach(key, what string) {
	if len(l.breaches) >= 10 {
		return // enough to tell what broke
	}
	l.breaches = append(l.breaches, fmt.Sprintf("%s (trail of %s: %s)", what, key, strings.Join(l.trail[key], " ")))
}

// handler is the group's handler: it checks the promise at every call and
// fails about one call in six.
func (l *orderLog) handler(ctx context.Context, m *equeue.Message) error {
	key, nstr, ok := strings.Cut(string(m.Body), "/")
	n, err := strconv.Atoi(nstr)
	if !ok || err != nil || len(m.Keys) == 0 || m.Keys[0] != key {
		return equeue.DeadLetter(fmt.Errorf("unexpected message %q keys %q", m.Body, m.Keys))
	}
	l.mu.Lock()
	l.note(key, fmt.Sprintf("begin:%d@%s/%d:%d", n, m.Topic, m.Queue, m.Offset))
	if n > 0 && l.handled[key][n-1] == 0 {
		l.breach(key, fmt.Sprintf("key %s: message %d began before message %d was handled", key, n, n-1))
	}
	if l.running[key] > 0 {
		l.breach(key, fmt.Sprintf("key %s: message %d began while another handler of the key ran", key, n))
	}
	l.running[key]++
	roll, pause := l.rng.IntN(100), time.Duration(l.rng.IntN(3))*time.Millisecond
	l.mu.Unlock()
	time.Sleep(pause)
	l.mu.Lock()
	l.running[key]--
	var out error
	switch {
	case roll < 10:
		l.note(key, fmt.Sprintf("fail:%d", n))
		out = fmt.Errorf("message %d of %s fails", n, key)
	case roll < 14:
		l.note(key, fmt.Sprintf("later:%d", n))
		out = equeue.RetryAfter(time.Duration(1+roll%5)*time.Millisecond, errors.New("not now"))
	case roll < 16:
		l.note(key, fmt.Sprintf("panic:%d", n))
	default:
		l.note(key, fmt.Sprintf("ok:%d", n))
		if l.handled[key] == nil {
			l.handled[key] = map[int]int{}
		}
		l.handled[key][n]++
	}
	l.mu.Unlock()
	if roll >= 14 && roll < 16 {
		panic("handler panics")
	}
	return out
}

// missing lists the messages of sent (key -> count) not handled yet.
func (l *orderLog) missing(sent map[string]int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for key, k := range sent {
		for n := 0; n < k; n++ {
			if l.handled[key][n] == 0 {
				out = append(out, fmt.Sprintf("%s/%d", key, n))
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// orderProducers send numbered sequences of their own keys (a key is
// sent by one goroutine only, one send at a time: its numbers are its
// send order) until stopped. Sends hold gate for reading: a reopen takes
// it for writing.
type orderProducers struct {
	gate sync.RWMutex
	p    *equeue.Producer // guarded by gate
	mu   sync.Mutex
	sent map[string]int // key -> messages acknowledged
	errs []error
	stop chan struct{}
	wg   sync.WaitGroup
}

func (ps *orderProducers) run(ctx context.Context, seed uint64, producers, keys int) {
	for i := 0; i < producers; i++ {
		ps.wg.Add(1)
		go func() {
			defer ps.wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			next := make([]int, keys)
			for {
				select {
				case <-ps.stop:
					return
				default:
				}
				j := rng.IntN(keys)
				key := fmt.Sprintf("p%d-k%d", i, j)
				ps.gate.RLock()
				_, err := ps.p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{key}, Body: fmt.Appendf(nil, "%s/%d", key, next[j])})
				ps.gate.RUnlock()
				ps.mu.Lock()
				if err != nil {
					ps.errs = append(ps.errs, fmt.Errorf("send %s/%d: %w", key, next[j], err))
					ps.mu.Unlock()
					return
				}
				next[j]++
				ps.sent[key] = next[j]
				ps.mu.Unlock()
				time.Sleep(time.Duration(rng.IntN(2)) * time.Millisecond)
			}
		}()
	}
}

func runOrderHistory(t *testing.T, transport string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	ctx := ctxT(t)
	e, b, restart := openOverRestartable(t, transport, &equeue.Options{SessionTimeout: 500 * time.Millisecond})
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	log := newOrderLog(seed)
	p, err := equeue.NewProducer(b, nil)
	require.NoError(t, err)
	ps := &orderProducers{p: p, sent: map[string]int{}, stop: make(chan struct{})}

	members := map[string]*equeue.Consumer{}
	// cuts holds the cutBroker of each member started behind one (about
	// half of them), which a step cuts off from the engine for a while.
	cuts := map[string]*cutBroker{}
	incarnation := map[string]int{}
	var history []string
	defer func() {
		if t.Failed() {
			t.Logf("seed %d: history %v", seed, history)
		}
	}()
	start := func(slot string) {
		mb := b
		delete(cuts, slot)
		if rng.IntN(2) == 0 {
			cuts[slot] = &cutBroker{Broker: b}
			mb = cuts[slot]
		}
		c, err := equeue.NewConsumer(mb, equeue.ConsumerOptions{
			Group: "g", ID: fmt.Sprintf("%s.%d", slot, incarnation[slot]), Subscriptions: []equeue.Subscription{{Topic: "t"}},
			Handler: log.handler, Orderly: true, MaxAttempts: 1000, LocalRetryDelay: time.Millisecond,
			CommitInterval: 20 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond,
		})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx), "seed %d: start %s", seed, slot)
		members[slot] = c
	}
	stop := func(slot string) {
		if cb := cuts[slot]; cb != nil {
			cb.cut.Store(false) // healed first, so that Close can commit and leave
		}
		require.NoError(t, members[slot].Close(), "seed %d: close %s", seed, slot)
		delete(members, slot)
	}
	// reopen closes the engine and opens it again: with its members
	// stopped first (and started again after), or under them. Closed under
	// them, an in-process engine closes them (as Engine.Close does); a
	// remote one leaves them cut off, and they are dropped as a killed
	// process would be before their slots start again.
	reopen := func(under bool) {
		ps.gate.Lock()
		defer ps.gate.Unlock()
		slots := make([]string, 0, len(members))
		for slot := range members {
			slots = append(slots, slot)
			if !under {
				stop(slot)
			}
		}
		require.NoError(t, ps.p.Close())
		e, b = restart()
		for _, slot := range slots {
			if c, on := members[slot]; on {
				equeue.CrashConsumer(c)
				delete(members, slot)
				incarnation[slot]++
			}
		}
		ps.p, err = equeue.NewProducer(b, nil)
		require.NoError(t, err)
		for _, slot := range slots {
			start(slot)
		}
	}
	start("c0")
	ps.run(ctx, seed, 3, 3)
	stopProducers := sync.OnceFunc(func() { close(ps.stop); ps.wg.Wait() })
	defer func() {
		stopProducers()
		for slot := range members {
			stop(slot)
		}
		_ = ps.p.Close()
	}()

	slots := []string{"c0", "c1", "c2"}
	steps := 20 + rng.IntN(20)
	for step := 0; step < steps; step++ {
		slot := slots[rng.IntN(len(slots))]
		switch op := rng.IntN(14); {
		case op < 4:
			if _, on := members[slot]; on {
				history = append(history, "stop "+slot)
				stop(slot)
			} else {
				history = append(history, "start "+slot)
				start(slot)
			}
		case op < 5 && len(members) > 0:
			for slot, c := range members {
				history = append(history, "crash "+slot)
				equeue.CrashConsumer(c)
				delete(members, slot)
				incarnation[slot]++
				break
			}
		case op < 7 && cuts[slot] != nil && members[slot] != nil:
			cb := cuts[slot]
			if cb.cut.Load() {
				history = append(history, "heal "+slot)
			} else {
				history = append(history, "cut "+slot)
			}
			cb.cut.Store(!cb.cut.Load())
		case op < 8:
			under := rng.IntN(2) == 0
			history = append(history, fmt.Sprintf("reopen (under the members %t)", under))
			reopen(under)
		default:
			d := time.Duration(rng.IntN(80)) * time.Millisecond
			history = append(history, "wait "+d.String())
			time.Sleep(d)
		}
	}
	stopProducers()
	for _, cb := range cuts {
		cb.cut.Store(false)
	}
	if len(members) == 0 {
		start("c0")
	}
	ps.mu.Lock()
	require.Empty(t, ps.errs, "seed %d: sends failed", seed)
	sent := ps.sent
	total := 0
	for _, k := range sent {
		total += k
	}
	ps.mu.Unlock()
	eventually(t, 30*time.Second, func() bool { return len(log.missing(sent)) == 0 },
		"seed %d: the first message not handled of each key: %v", seed, func() any { return log.missing(sent) })
	log.mu.Lock()
	defer log.mu.Unlock()
	t.Logf("seed %d: %d messages of %d keys, history %v", seed, total, len(sent), history)
	require.Empty(t, log.breaches, "seed %d: the ordering promise broke", seed)
}

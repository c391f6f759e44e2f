package remote_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/holdproxy"
	"github.com/equeue-go/equeue/remote"
)

// scaleMembers is how many consumer members TestScale_ManyIdleConsumers
// starts: EQUEUE_SCALE_MEMBERS, default 300 (1,000 for the full run).
func scaleMembers(t *testing.T) int {
	n := 300
	if v := os.Getenv("EQUEUE_SCALE_MEMBERS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	return n
}

// TestScale_ManyIdleConsumers is the outside tester's scenario: many
// consumer members (300, EQUEUE_SCALE_MEMBERS=1000 for the full run) in
// four groups on a topic of 64 queues long-poll an idle topic over one
// shared client, and over 100 clients. Then a producer on a new client
// has its sends answered and delivered to every group; heartbeats keep
// every member (no epoch changes once the joins settled); the process's
// goroutines do not grow across three long-poll rounds; a member whose
// connection is cut keeps, or gets back, its queues, the others' untouched;
// and once all are closed no goroutine is left and the groups are empty.
// The costs per member are logged. One run (longIdle) stays idle past a
// session, the other three long-poll rounds: both check every member's
// own heartbeats, and a session outlasted once is proof enough, where
// twice cost the default run over a minute more.
func TestScale_ManyIdleConsumers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		clients  int
		longIdle bool
	}{{"one shared client", 1, false}, {"100 clients", 100, true}} {
		t.Run(tc.name, func(t *testing.T) { runManyIdle(t, scaleMembers(t), tc.clients, tc.longIdle) })
	}
}

// processSample is what one measurement of the process finds.
type processSample struct {
	goroutines, server int    // every goroutine, and those of the server's side
	heap               uint64 // live heap after a collection
}

// sampleProcess measures the process (clients, consumers, server and
// engine all run in it); server counts the goroutines of gRPC's server
// transport, its calls and the remote service.
func sampleProcess() processSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	buf := make([]byte, 64<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var s processSample
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		s.goroutines++
		for _, mark := range []string{"grpc/internal/transport.(*http2Server)", "google.golang.org/grpc.(*Server)", "equeue/remote.(*service)", "equeue/remote.(*Server)"} {
			if bytes.Contains(g, []byte(mark)) {
				s.server++
				break
			}
		}
	}
	s.heap = ms.HeapAlloc
	return s
}

// groupState is a group's epoch and owner of each of its queues.
type groupState struct {
	epoch   int64
	members int
	owners  map[string]string // "topic/queue" -> member
}

func readGroup(t *testing.T, e *equeue.Engine, name string) groupState {
	t.Helper()
	gi, err := e.Group(context.Background(), name)
	require.NoError(t, err)
	st := groupState{epoch: gi.Epoch, members: len(gi.Members), owners: map[string]string{}}
	for _, q := range gi.Queues {
		st.owners[fmt.Sprintf("%s/%d", q.Topic, q.Queue)] = q.Owner
	}
	return st
}

// runManyIdle runs the scenario with members on clients; longIdle keeps
// the idle window on past a session (see TestScale_ManyIdleConsumers).
func runManyIdle(t *testing.T, members, clients int, longIdle bool) {
	const (
		groups   = 4
		queues   = 64
		pullWait = time.Second
	)
	// Heartbeats every second in the engine's default session (30 s).
	// Tighter (500 ms in 3 s, 1 s in 6 s, then 1 s in 10 s), the race
	// detector on two cores shared with other test runs starved members
	// past their session (0.30–0.45 heartbeats per member per second, the
	// whole process stalled for up to 10 s), and each expiry rebalanced
	// its group. The idle window still outlasts a session, and every
	// member's own heartbeats are counted across it.
	const heartbeat, session = time.Second, equeue.DefaultSessionTimeout
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := openEngine(t, &equeue.Options{SessionTimeout: session, MaxPullWait: pullWait})
	require.NoError(t, e.CreateTopic(ctx, "t", queues))
	b := &countingBackend{Engine: e}
	srv, err := remote.NewBackendServer(b, nil)
	require.NoError(t, err)
	s := serve(t, srv, "")
	proxy := holdproxy.New(t, s.addr) // the cut member's connection
	groupOf := func(i int) string { return fmt.Sprint("g", i%groups) }

	// The producer's client, dialled now so that the server's goroutines
	// started by a first call are in the baseline.
	pc, err := remote.Dial(s.addr, nil)
	require.NoError(t, err)
	closeProducer := sync.OnceFunc(func() { assert.NoError(t, pc.Close()) })
	defer closeProducer()
	p, err := equeue.NewProducer(pc, &equeue.ProducerOptions{Selector: equeue.QueueSelectorFunc(func(m *equeue.Message, writable []int) int {
		q, _ := strconv.Atoi(m.Properties["q"])
		return q
	})})
	require.NoError(t, err)
	stopProducer := sync.OnceFunc(func() {
		assert.NoError(t, p.Close())
		closeProducer()
	})
	defer stopProducer()
	_, err = p.Send(ctx, &equeue.Message{Topic: "warm", Body: []byte("w")})
	require.ErrorIs(t, err, equeue.ErrTopicNotFound)
	base := sampleProcess()
	leftBefore := goleak.IgnoreCurrent()

	cls := make([]*remote.Client, clients+1) // the last one through the proxy
	for i := range cls {
		addr := s.addr
		if i == clients {
			addr = proxy.Addr()
		}
		cls[i], err = remote.Dial(addr, nil)
		require.NoError(t, err)
	}
	closeClients := sync.OnceFunc(func() {
		for _, c := range cls {
			assert.NoError(t, c.Close())
		}
	})
	defer closeClients()

	got := newCollector()
	cons := make([]*equeue.Consumer, members+1)
	start := func(i int, group, id string, c *remote.Client) error {
		var err error
		cons[i], err = equeue.NewConsumer(c, equeue.ConsumerOptions{Group: group, ID: id,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest,
			Handler: got.handler(group + "/" + id), HeartbeatInterval: heartbeat, PullWait: pullWait,
			CommitInterval: 200 * time.Millisecond})
		if err != nil {
			return err
		}
		return cons[i].Start(ctx)
	}
	closeConsumers := sync.OnceFunc(func() {
		var wg sync.WaitGroup
		for _, c := range cons {
			if c != nil {
				wg.Go(func() { assert.NoError(t, c.Close()) })
			}
		}
		wg.Wait()
	})
	defer closeConsumers()
	began := time.Now()
	// The cut member sorts first in g0, so it holds queues.
	require.NoError(t, start(members, "g0", "cut", cls[clients]))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	errs := make(chan error, members)
	for i := range members {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := start(i, groupOf(i), fmt.Sprintf("m%04d", i), cls[i%clients]); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	want := func(g int) int {
		n := members / groups
		if g < members%groups {
			n++
		}
		if g == 0 {
			n++ // the cut member
		}
		return n
	}
	settled := map[string]groupState{}
	eventually(t, 60*time.Second, func() bool {
		for g := range groups {
			st := readGroup(t, e, fmt.Sprint("g", g))
			if st.members != want(g) {
				return false
			}
			for q, o := range st.owners {
				if strings.HasPrefix(q, "t/") && o == "" {
					return false
				}
			}
			settled[fmt.Sprint("g", g)] = st
		}
		return true
	}, "every member joined and every queue is owned")
	joined := sampleProcess()
	t.Logf("%d members joined and settled in %v", members+1, time.Since(began))

	// (1) A producer on a new client: each send answered and delivered to
	// every group.
	// The sends go together: one after the other, each waited for a
	// server busy with the members' calls and the run took 25 s more.
	var (
		slowestMu sync.Mutex
		slowest   time.Duration
	)
	sendErrs := make([]error, queues)
	var sends sync.WaitGroup
	for q := range queues {
		sends.Go(func() {
			began := time.Now()
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := p.Send(sctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "a%d", q), Properties: map[string]string{"q": strconv.Itoa(q)}})
			took := time.Since(began)
			if err != nil {
				sendErrs[q] = fmt.Errorf("send %d (after %v): %w", q, took, err)
			}
			slowestMu.Lock()
			slowest = max(slowest, took)
			slowestMu.Unlock()
		})
	}
	sends.Wait()
	for _, err := range sendErrs {
		require.NoError(t, err)
	}
	delivered := func(prefix string, n int) func() bool {
		return func() bool {
			snap := got.snapshot()
			for i := range n {
				by := snap[fmt.Sprint(prefix, i)]
				seen := map[string]bool{}
				for _, w := range by {
					seen[w[:strings.IndexByte(w, '/')]] = true
				}
				if len(seen) != groups {
					return false
				}
			}
			return true
		}
	}
	eventually(t, 60*time.Second, delivered("a", queues), "every send reached every group (%d deliveries)", func() any { return got.count() })

	// (2) and (3) Idle rounds: the members stay, no rebalance, the
	// goroutines do not grow. The window is sized by the members' own
	// heartbeats, not the clock alone: at least three rounds, and on until
	// every member sent two heartbeats more (however slow the machine), so
	// that one that stopped heartbeating is caught; with longIdle, on
	// until it outlasts a session too, so that a member kept only by a
	// session not run out yet is caught. The run with 100 clients carries
	// it: its rounds are the slowest, and it waits out a session anyway
	// (expireAndRejoin).
	var rounds []int // the goroutines of each round
	beats, idleFrom := b.heartbeats.Load(), time.Now()
	memberBeats := b.perMember()
	beatTwice := func() bool {
		now := b.perMember()
		for id, n := range memberBeats {
			if now[id] < n+2 {
				return false
			}
		}
		return len(now) >= members+1
	}
	idleBound := time.Now().Add(3 * time.Minute)
	for len(rounds) < 3 || (longIdle && time.Since(idleFrom) < session+heartbeat) || (!beatTwice() && time.Now().Before(idleBound)) {
		time.Sleep(pullWait + heartbeat) // one long-poll round and a heartbeat
		// The fewest of a few counts: held calls come and go between them.
		// A count, not a whole sample: a collection and a dump of every
		// stack took seconds each with the race detector, and the rounds
		// of the run over 100 clients several times longer than a round.
		least := runtime.NumGoroutine()
		for range 2 {
			time.Sleep(heartbeat / 5)
			least = min(least, runtime.NumGoroutine())
		}
		rounds = append(rounds, least)
	}
	idle, sentBeats := time.Since(idleFrom), b.heartbeats.Load()-beats
	assert.Len(t, memberBeats, members+1, "members that heartbeat before the idle window")
	now := b.perMember()
	var stalled []string
	for id, n := range memberBeats {
		if now[id] < n+2 {
			stalled = append(stalled, fmt.Sprintf("%s: %d then %d", id, n, now[id]))
		}
	}
	slices.Sort(stalled)
	assert.Empty(t, stalled, "members whose heartbeats did not go on across %v idle", idle)
	for g := range groups {
		name := fmt.Sprint("g", g)
		st := readGroup(t, e, name)
		assert.Equal(t, want(g), st.members, "%s: a member expired while idle", name)
		assert.Equal(t, settled[name].epoch, st.epoch, "%s: rebalanced while idle", name)
	}
	held := remote.HeldLongPolls(s.srv)
	t.Logf("idle: %.2f heartbeats per member per second (one per %v expected)", float64(sentBeats)/float64(members+1)/idle.Seconds(), heartbeat)
	// A heartbeat answered at once instead of held would send hundreds; a
	// slow machine sends fewer, never more.
	assert.LessOrEqual(t, sentBeats, 5*int64(members+1)*(int64(idle/heartbeat)+1), "idle members heartbeat without waiting")
	grew := rounds[len(rounds)-1] - rounds[0]
	// A goroutine left behind by each heartbeat would add about two per
	// member and round (a round is a pull wait and a heartbeat interval and
	// more; about one on a starved machine); a member's held heartbeat
	// comes and goes between samples.
	assert.Less(t, grew, members+16, "goroutines grew by %d over %d long-poll rounds: %v", grew,
		len(rounds)-1, rounds)
	last := sampleProcess()
	per := func(a, b int) float64 { return float64(a-b) / float64(members+1) }
	t.Logf("%d members on %d clients: slowest send %v; per member: %.2f goroutines (%.2f of the server's), %.1f KiB of heap (process); long-polls held: %d; after joining: %.2f goroutines (%.2f server); rounds: %v",
		members+1, clients+1, slowest, per(last.goroutines, base.goroutines), per(last.server, base.server),
		float64(int64(last.heap)-int64(base.heap))/1024/float64(members+1), held,
		per(joined.goroutines, base.goroutines), per(joined.server, base.server), rounds)

	// (5) The cut member's connection is closed under it: it keeps its
	// queues and handles their messages, and no group rebalances. Then its
	// connection stops passing bytes until the engine expires it, and is
	// closed: it rejoins and gets its queues back; the other groups are
	// untouched all along.
	before := map[string]groupState{}
	for g := range groups {
		before[fmt.Sprint("g", g)] = readGroup(t, e, fmt.Sprint("g", g))
	}
	var mine []int
	for q, o := range before["g0"].owners {
		if o == "cut" && strings.HasPrefix(q, "t/") {
			n, _ := strconv.Atoi(strings.TrimPrefix(q, "t/"))
			mine = append(mine, n)
		}
	}
	require.NotEmpty(t, mine, "the cut member holds queues of t")
	slices.Sort(mine)
	handledByCut := func(prefix string) {
		t.Helper()
		for i, q := range mine {
			began := time.Now()
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := p.Send(sctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%s%d", prefix, i), Properties: map[string]string{"q": strconv.Itoa(q)}})
			cancel()
			require.NoError(t, err, "send %s%d (after %v)", prefix, i, time.Since(began))
		}
		eventually(t, 60*time.Second, func() bool {
			snap := got.snapshot()
			for i := range mine {
				if !slices.Contains(snap[fmt.Sprint(prefix, i)], "g0/cut") {
					return false
				}
			}
			return true
		}, "the cut member handles its queues' messages (%s)", prefix)
		eventually(t, 30*time.Second, delivered(prefix, len(mine)), "every group got the messages (%s)", prefix)
	}
	untouched := func(stage string, g0 bool) {
		t.Helper()
		for g := range groups {
			name := fmt.Sprint("g", g)
			st := readGroup(t, e, name)
			assert.Equal(t, before[name].owners, st.owners, "%s: %s: the queues moved", stage, name)
			if g != 0 || g0 {
				assert.Equal(t, before[name].epoch, st.epoch, "%s: %s rebalanced", stage, name)
			}
		}
	}
	proxy.Cut()
	handledByCut("c")
	untouched("connection closed", true)

	if clients > 1 { // the cut member's own client is the same in both runs
		expireAndRejoin(t, e, proxy, want(0), mine)
		eventually(t, 2*time.Minute, func() bool { return maps.Equal(before["g0"].owners, readGroup(t, e, "g0").owners) },
			"g0 settles back to the queues' owners before")
		handledByCut("d")
		untouched("expired and rejoined", false)
	}

	// (4) Closing every consumer and client leaves no goroutine, and the
	// groups empty.
	closeConsumers()
	closeClients()
	stopProducer()
	eventually(t, 30*time.Second, func() bool {
		for g := range groups {
			if readGroup(t, e, fmt.Sprint("g", g)).members != 0 {
				return false
			}
		}
		return true
	}, "the groups emptied")
	goleak.VerifyNone(t, leftBefore)
}

// expireAndRejoin stops the cut member's connection (through proxy)
// passing bytes until the engine expires it from g0, then closes it: the
// member rejoins and gets back its queues of t, mine.
func expireAndRejoin(t *testing.T, e *equeue.Engine, proxy *holdproxy.Proxy, members int, mine []int) {
	t.Helper()
	proxy.Hang()
	defer proxy.LetGo() // a failed wait does not leave the member's client hanging
	eventually(t, 2*time.Minute, func() bool { return readGroup(t, e, "g0").members == members-1 },
		"the engine expires the member whose connection passes nothing")
	proxy.Cut()
	proxy.LetGo()
	eventually(t, 60*time.Second, func() bool {
		st := readGroup(t, e, "g0")
		if st.members != members {
			return false
		}
		for _, q := range mine {
			if st.owners[fmt.Sprint("t/", q)] != "cut" {
				return false
			}
		}
		return true
	}, "the expired member rejoins and gets its queues back")
}

// countingBackend is an engine that counts the heartbeats it is sent, in
// all and per member.
type countingBackend struct {
	*equeue.Engine
	heartbeats atomic.Int64
	mu         sync.Mutex
	byMember   map[string]int // "group/member" -> heartbeats
}

func (b *countingBackend) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	b.heartbeats.Add(1)
	b.mu.Lock()
	if b.byMember == nil {
		b.byMember = map[string]int{}
	}
	b.byMember[req.Group+"/"+req.Member]++
	b.mu.Unlock()
	return b.Engine.Heartbeat(ctx, req)
}

// perMember is how many heartbeats each member has sent so far.
func (b *countingBackend) perMember() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.byMember)
}

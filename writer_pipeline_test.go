package equeue_test

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
)

// syncGate holds the first Sync after arm until release, so a test can act
// while one batch's fsync is in flight.
type syncGate struct {
	armed   atomic.Bool
	entered chan struct{}
	out     chan error
	once    sync.Once
}

func newSyncGate(t *testing.T, fs *faultstore.FS) *syncGate {
	g := &syncGate{entered: make(chan struct{}), out: make(chan error, 1)}
	fs.OnSync(func() error {
		if !g.armed.CompareAndSwap(true, false) {
			return nil
		}
		close(g.entered)
		return <-g.out
	})
	t.Cleanup(func() { g.release(nil) }) // never leave the engine's Close blocked
	return g
}

func (g *syncGate) arm() { g.armed.Store(true) }

func (g *syncGate) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(waitLong):
		t.Fatal("no sync started")
	}
}

func (g *syncGate) release(err error) { g.once.Do(func() { g.out <- err }) }

type sendOutcome struct {
	res equeue.AppendResult
	err error
}

func sendAsync(s sendShape, e *equeue.Engine, tag string) <-chan sendOutcome {
	ch := make(chan sendOutcome, 1)
	go func() {
		res, err := s.send(e, tag)
		ch <- sendOutcome{res, err}
	}()
	return ch
}

// pipelineCase is what happens to batch A (whose fsync is held) and to
// batch B, written while A's fsync is in flight.
type pipelineCase struct {
	name      string
	syncAErr  error // what A's Sync returns
	failWrite bool  // B's Write fails
}

var pipelineCases = []pipelineCase{
	{name: "A-synced/B-written"},
	{name: "A-sync-fails/B-written", syncAErr: faultstore.ErrInjected},
	{name: "A-synced/B-write-fails", failWrite: true},
	{name: "A-sync-fails/B-write-fails", syncAErr: faultstore.ErrInjected, failWrite: true},
}

// The writer writes batch B while batch A's fsync is in flight, and
// completes them in order: B is not acknowledged before A's outcome is
// known, A is invisible to readers until its fsync returned, and each
// caller gets today's outcome — a failed fsync of A makes A unknown (kept),
// and B too, since B's pages may have been swept into that fsync; a failed
// Write of B stores nothing of B and leaves A as its fsync says. After a
// failed fsync nothing more is stored until a reopen. A later send follows
// what is stored, and a reopen holds exactly the batches that were
// acknowledged or reported unknown.
func TestWriter_PipelinedBatchesCompleteInOrder(t *testing.T) {
	for _, kind := range storeKinds {
		for _, s := range sendShapes {
			for _, pc := range pipelineCases {
				t.Run(kind+"/"+s.name+"/"+pc.name, func(t *testing.T) {
					r := s.rig(t, kind)
					g := newSyncGate(t, r.FS)
					g.arm()
					a := sendAsync(s, r.E, "a")
					g.waitEntered(t)
					writes := r.FS.Writes()
					if pc.failWrite {
						r.FS.FailWrites(1)
					}
					b := sendAsync(s, r.E, "b")
					eventually(t, waitLong, func() bool { return r.FS.Writes() > writes },
						"batch B is written while A's fsync is in flight")
					if !s.delay {
						assert.Empty(t, queueBodies(t, r.E, "t", 0), "A is not visible before its fsync returned")
					}
					select {
					case o := <-b:
						t.Fatalf("B completed before A's fsync returned: %+v", o)
					case o := <-a:
						t.Fatalf("A completed before its fsync returned: %+v", o)
					default:
					}
					g.release(pc.syncAErr)
					oa, ob := <-a, <-b

					var want []string
					if pc.syncAErr != nil {
						require.ErrorIs(t, oa.err, equeue.ErrIndeterminate)
					} else {
						require.NoError(t, oa.err)
					}
					want = append(want, s.bodies("a")...) // stored either way
					if pc.failWrite {
						require.ErrorIs(t, ob.err, faultstore.ErrInjected)
						assert.NotErrorIs(t, ob.err, equeue.ErrIndeterminate)
					} else {
						if pc.syncAErr != nil {
							require.ErrorIs(t, ob.err, equeue.ErrIndeterminate, "B was written while A's failed fsync ran")
						} else {
							require.NoError(t, ob.err)
							if !s.delay {
								assert.Equal(t, int64(s.n), ob.res.FirstOffset, "B follows A")
							}
						}
						want = append(want, s.bodies("b")...)
					}
					if pc.syncAErr != nil {
						_, err := s.send(r.E, "c")
						require.ErrorIs(t, err, equeue.ErrStoreFailed)
						if !s.delay {
							assert.Empty(t, queueBodies(t, r.E, "t", 0), "nothing of unknown outcome is shown")
						}
						r.reopen()
					}
					oc, err := s.send(r.E, "c")
					require.NoError(t, err)
					if !s.delay {
						assert.Equal(t, int64(len(want)), oc.FirstOffset, "C follows what is stored")
					}
					want = append(want, s.bodies("c")...)
					settle(t, r, s, want)
					if kind == "badger" {
						r.reopen()
						settle(t, r, s, want)
					}
				})
			}
		}
	}
}

// Senders acknowledged by one fsync come back together. Those that queued
// while it ran must wait for them, so that both share the next fsync rather
// than alternate in two cohorts that each pay one (with an fsync slower
// than the writer's linger, they used to alternate for good).
func TestWriter_CohortsShareOneSync(t *testing.T) {
	// An fsync far slower than the linger, and a linger long enough for
	// the returning senders even under -race on a loaded machine.
	syncPerRound(t, 16, 10, 20*time.Millisecond, 0, nil)
}

// With Syncs slower than the linger, senders that come back over longer
// than the linger still share one Sync: the writer waits for them up to a
// recent Sync's time (within its cap), as the Sync they would otherwise
// pay on their own would take that long. With the fixed linger each round
// split in two, paying two Syncs.
func TestWriter_SlowSyncsWaitForSlowerSenders(t *testing.T) {
	// Back 0–14 ms after each acknowledgement: longer than the linger,
	// well within the Sync.
	syncPerRound(t, 8, 8, time.Millisecond, 200*time.Millisecond, func(g int) { time.Sleep(time.Duration(g) * 2 * time.Millisecond) })
}

// syncPerRound has senders append rounds messages each (appendRounds) to
// an engine whose fsyncs take 100 ms, with the writer's linger and its
// cap (0: the default) set, and checks that they share one fsync per
// round: a few more while the cohorts form, where split cohorts pay about
// two per round.
func syncPerRound(t *testing.T, senders, rounds int, linger, lingerCap time.Duration, pause func(g int)) {
	t.Helper()
	r := slowSyncRig(t, 100*time.Millisecond, linger, lingerCap)
	before := r.FS.Syncs()
	appendRounds(t, r.E, senders, rounds, pause)
	syncs := r.FS.Syncs() - before
	assert.LessOrEqual(t, syncs, int64(rounds+4), "%d fsyncs for %d rounds of %d senders", syncs, rounds, senders)
	assert.Len(t, queueBodies(t, r.E, "t", 0), senders*rounds)
}

// Without a Sync to wait for, the writer completes a batch itself, and
// its senders' next requests go into the next batch rather than the one
// after: all the senders share one write per round. Without
// letSendersBack, the senders completed by each write ran only while the
// writer was in its next write, so they split into two cohorts taking
// turns, two writes per round (checked). On a busy machine, a thread the
// OS preempts during the writer's yield splits the cohort until a later
// yield succeeds, so the best of five runs counts (of three, one full
// -race run beside other test processes saw none within the bound).
func TestWriter_SendersCompletedInlineJoinTheNextWrite(t *testing.T) {
	const senders, rounds, runs = 8, 24, 5
	r := newFaultRig(t, "memory", &equeue.Options{Sync: equeue.SyncNever})
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	r.FS.Delay(5*time.Millisecond, 0) // long enough for every sender to come back
	// A yield the OS preempted turns yielding off for a second: on a busy
	// machine that would be the whole test.
	equeue.SetSenderYieldsOff(r.E, time.Millisecond)
	best := int64(math.MaxInt64)
	var all []int64
	for range runs {
		before := r.FS.Writes()
		appendRounds(t, r.E, senders, rounds, nil)
		writes := r.FS.Writes() - before
		all = append(all, writes)
		best = min(best, writes)
	}
	assert.LessOrEqual(t, best, int64(rounds+rounds/2), "writes for %d rounds of %d senders, in %d runs: %v", rounds, senders, runs, all)
	assert.Len(t, queueBodies(t, r.E, "t", 0), runs*senders*rounds)
}

// When the host program keeps every processor busy, a yield to the
// senders costs a scheduling quantum, so the writer stops yielding after
// the first slow one: here two spinning goroutines per processor, and
// blocking senders whose writes complete inline. Without the back-off the
// writer yielded after nearly every batch (checked: 30–60 yields, each up
// to 10 ms).
func TestWriter_StopsYieldingWhenTheProcessorsAreBusy(t *testing.T) {
	const senders, rounds = 4, 24
	r := newFaultRig(t, "memory", &equeue.Options{Sync: equeue.SyncNever})
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	stop := make(chan struct{})
	var spinners, spinning sync.WaitGroup
	n := 2 * runtime.GOMAXPROCS(0)
	spinning.Add(n)
	for range n {
		spinners.Go(func() {
			spinning.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := 0; i < 1<<16; i++ {
					spinSink.Add(1)
				}
			}
		})
	}
	defer spinners.Wait()
	defer close(stop)
	spinning.Wait()
	before := equeue.SenderYields(r.E)
	appendRounds(t, r.E, senders, rounds, nil)
	yields := equeue.SenderYields(r.E) - before
	t.Logf("%d yields", yields)
	assert.LessOrEqual(t, yields, int64(12), "%d yields with every processor busy", yields)
	assert.Len(t, queueBodies(t, r.E, "t", 0), senders*rounds)
}

// spinSink keeps the spinning goroutines' loops from being optimized out.
var spinSink atomic.Int64

// SendAsync callers do not wait for their sends, so they do not come
// back as a group when a Sync acknowledges them: the writer does not
// linger for them. Here a burst of 8 asynchronous sends and then a single
// one: the writer used to linger for 7 more (the size of its last batch),
// a whole linger of 50 ms (checked), which showed in the tail of
// BenchmarkLatency's open-loop SendAsync traffic. Blocking senders still
// make it linger (TestWriter_SlowSyncsWaitForSlowerSenders).
func TestWriter_DoesNotLingerForSendAsync(t *testing.T) {
	r := slowSyncRig(t, 5*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond)
	p, err := equeue.NewProducer(r.E, nil)
	require.NoError(t, err)
	defer p.Close()
	send := func(n int) {
		futs := make([]*equeue.SendFuture, n)
		for i := range futs {
			futs[i] = p.SendAsync(ctxBG, &equeue.Message{Topic: "t", Body: []byte("x")})
		}
		for _, f := range futs {
			_, err := f.Result(ctxBG)
			require.NoError(t, err)
		}
	}
	for range 3 {
		send(8)
		before := equeue.LingerExpiries(r.E)
		send(1)
		assert.Zero(t, equeue.LingerExpiries(r.E)-before, "the writer lingered for asynchronous senders")
	}
	assert.Len(t, queueBodies(t, r.E, "t", 0), 27)
}

// Senders that stop coming back as a group (here one sender after a
// group of 8) are not waited for again and again: with Syncs slow enough
// to stretch the linger, the first linger that runs out lowers the
// writer's target to the senders that came. (It used to fall by one per
// batch, each batch lingering in vain for the rest.)
func TestWriter_AGroupThatBreaksUpIsNotWaitedFor(t *testing.T) {
	const senders, rounds = 8, 6
	// Syncs slower than the linger stretch it (lingerFor).
	r := slowSyncRig(t, 20*time.Millisecond, 2*time.Millisecond, 20*time.Millisecond)
	appendRounds(t, r.E, senders, rounds, nil)
	before := equeue.LingerExpiries(r.E)
	for i := range 10 {
		_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs(fmt.Sprintf("alone-%d", i))})
		require.NoError(t, err)
	}
	expiries := equeue.LingerExpiries(r.E) - before
	assert.LessOrEqual(t, expiries, int64(2), "the lone sender waited out %d lingers", expiries)
	assert.Len(t, queueBodies(t, r.E, "t", 0), senders*rounds+10)
}

// A failed fsync shared by a merged cohort: every sender whose batch it
// covered (or that was written while it ran) learns "outcome unknown", every
// later one is refused (nothing stored) until a reopen, none gets any other
// error; after the reopen exactly the acknowledged and the unknown messages
// are there, each once.
func TestWriter_CohortsShareAFailedSync(t *testing.T) {
	const senders, rounds = 16, 6
	r := newFaultRig(t, "memory", &equeue.Options{Sync: equeue.SyncAlways})
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	r.FS.Delay(0, 30*time.Millisecond)
	equeue.SetGroupCommitLinger(r.E, 20*time.Millisecond)
	failNthSync(r, 5) // once the cohorts have merged
	outcomes := sendOutcomes(t, r.E, senders, rounds)
	count := map[string]int{}
	for _, o := range outcomes {
		count[o]++
	}
	t.Logf("outcomes: %v", count)
	assert.Positive(t, count["unknown"], "the failed fsync was reported")
	e := r.reopen()
	seen := map[string]bool{}
	for _, b := range queueBodies(t, e, "t", 0) {
		assert.False(t, seen[b], "stored twice: %s", b)
		seen[b] = true
		assert.Contains(t, []string{"acked", "unknown"}, outcomes[b], "%s stored after %q", b, outcomes[b])
	}
	for b, o := range outcomes {
		if o != "refused" {
			assert.True(t, seen[b], "%s (%s) kept", b, o)
		}
	}
}

// slowSyncRig returns a SyncAlways engine on the memory store with topic
// "t" of one queue, whose fsyncs take syncDelay, and the writer's linger
// and its cap (0: the default) set.
func slowSyncRig(t *testing.T, syncDelay, linger, lingerCap time.Duration) *faultRig {
	t.Helper()
	r := newFaultRig(t, "memory", &equeue.Options{Sync: equeue.SyncAlways})
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	r.FS.Delay(0, syncDelay)
	equeue.SetGroupCommitLinger(r.E, linger)
	if lingerCap > 0 {
		equeue.SetGroupCommitLingerCap(r.E, lingerCap)
	}
	return r
}

// appendRounds has senders goroutines append rounds messages each to queue
// 0 of topic "t", one at a time, sender g pausing with pause(g) (when set)
// after each acknowledgement.
func appendRounds(t *testing.T, e *equeue.Engine, senders, rounds int, pause func(g int)) {
	t.Helper()
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range rounds {
				_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs(fmt.Sprintf("%d-%d", g, i))})
				assert.NoError(t, err)
				if pause != nil {
					pause(g)
				}
			}
		})
	}
	wg.Wait()
}

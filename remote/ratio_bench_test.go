package remote_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// BenchmarkRemoteRatio measures a path over remote against the same path
// in-process on one Badger engine, alternating the two in rounds within
// one run (the side that goes first alternates too), so a shared machine's
// load changes hit both alike. Every round of a side moves the same number
// of messages. It reports each side's rate over all its rounds
// (inproc-msgs/s, remote-msgs/s) and their quotient (ratio), each side's
// median round rate (inproc-med-msgs/s, remote-med-msgs/s), the median of
// the rounds' own remote/inproc quotients (med-ratio: a round's two sides
// ran next to each other, so a load change between rounds moves both), and
// each side's CPU time (client and broker together) and allocations per
// message; Consume also reports each side's mean Start per round
// (start-us), which its time includes. One op is one message of each side.
//
//	go test -run '^$' -bench RemoteRatio -benchtime 200000x ./remote
//
// Consume's rounds are short at that size (25,000 messages, 20-40 ms), and
// what a consumer does once per round (Start, the first pulls, the last
// answers) weighs in them; -benchtime 1000000x gives rounds of 125,000.
//
// With EQUEUE_BENCH_PROFILE set to a directory, every round is
// CPU-profiled there (client and broker share the process). With
// EQUEUE_BENCH_MEMORY set, the engine keeps its data in memory instead
// (not the target: it leaves out the store's and the disk's time and
// noise, so what remote adds per message stands out).
func BenchmarkRemoteRatio(b *testing.B) {
	const benchMemoryEnv = "EQUEUE_BENCH_MEMORY"
	const rounds = 8
	type side struct {
		name   string
		br     equeue.Broker
		took   time.Duration
		rounds []time.Duration // each round's took
		cpu    time.Duration
		allocs uint64
		start  time.Duration // Consume: the consumers' Start calls, within took
	}
	// setup opens the engine on its own Badger store (in memory with
	// benchMemoryEnv); settle flushes and flattens that store, so that
	// Badger's compaction of a fill does not land in some rounds' reads.
	setup := func(b *testing.B) (e *equeue.Engine, sides []*side, settle func()) {
		opts := &equeue.Options{InMemory: true}
		settle = func() {}
		if os.Getenv(benchMemoryEnv) == "" {
			st, err := store.OpenBadger(b.TempDir(), nil)
			require.NoError(b, err)
			opts = &equeue.Options{Store: st}
			settle = func() { require.NoError(b, st.Reclaim()) }
		}
		e, err := equeue.Open("", opts)
		require.NoError(b, err)
		b.Cleanup(func() { require.NoError(b, e.Close()) })
		s := startServer(b, e, "", nil)
		return e, []*side{{name: "inproc", br: e}, {name: "remote", br: dial(b, s.addr, nil)}}, settle
	}
	report := func(b *testing.B, sides []*side, msgs int) {
		rate := func(s *side) float64 { return float64(msgs) / s.took.Seconds() }
		b.ReportMetric(rate(sides[0]), "inproc-msgs/s")
		b.ReportMetric(rate(sides[1]), "remote-msgs/s")
		b.ReportMetric(rate(sides[1])/rate(sides[0]), "ratio")
		perRound := msgs / rounds
		ratios := make([]float64, rounds)
		for i := range ratios {
			// remote's rate over inproc's is inproc's time over remote's.
			ratios[i] = sides[0].rounds[i].Seconds() / sides[1].rounds[i].Seconds()
		}
		for _, sd := range sides {
			rates := make([]float64, len(sd.rounds))
			for i, t := range sd.rounds {
				rates[i] = float64(perRound) / t.Seconds()
			}
			b.ReportMetric(median(rates), sd.name+"-med-msgs/s")
		}
		b.ReportMetric(median(ratios), "med-ratio")
		if _, ok := benchProcessCPU(); ok {
			for _, sd := range sides {
				b.ReportMetric(float64(sd.cpu.Microseconds())/float64(msgs), sd.name+"-cpu-µs/msg")
			}
		}
		for _, sd := range sides {
			b.ReportMetric(float64(sd.allocs)/float64(msgs), sd.name+"-allocs/msg")
		}
	}
	// timed runs f as one round of sd, adding its wall and CPU time; with
	// benchProfileEnv set, each round is CPU-profiled, one file per side
	// and round (<side>-<path>-<round>.cpu; give pprof all of a side's).
	timed := func(b *testing.B, sd *side, round int, f func()) {
		if dir := os.Getenv(benchProfileEnv); dir != "" {
			name := fmt.Sprintf("%s-%s-%d.cpu", sd.name, strings.ReplaceAll(b.Name()[len("BenchmarkRemoteRatio/"):], "/", "-"), round)
			pf, err := os.Create(filepath.Join(dir, name))
			require.NoError(b, err)
			require.NoError(b, pprof.StartCPUProfile(pf))
			defer func() {
				pprof.StopCPUProfile()
				require.NoError(b, pf.Close())
			}()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		allocs := ms.Mallocs
		cpu0, _ := benchProcessCPU()
		start := time.Now()
		f()
		took := time.Since(start)
		sd.took += took
		sd.rounds = append(sd.rounds, took)
		cpu1, _ := benchProcessCPU()
		sd.cpu += cpu1 - cpu0
		runtime.ReadMemStats(&ms)
		sd.allocs += ms.Mallocs - allocs
	}
	chunk := func(b *testing.B) int { return max(b.N/rounds, 1) }
	// order gives round r's sides, in-process first in even rounds and
	// remote first in odd ones.
	order := func(sides []*side, r int) []*side {
		if r%2 == 1 {
			return []*side{sides[1], sides[0]}
		}
		return sides
	}

	// SendBatch: 4 senders, batches of 100.
	b.Run("SendBatch", func(b *testing.B) {
		const senders, batch = 4, 100
		e, sides, _ := setup(b)
		require.NoError(b, e.CreateTopic(context.Background(), "bench", 4))
		msgs := make([]*equeue.Message, batch)
		for i := range msgs {
			msgs[i] = benchMessage()
		}
		n := chunk(b)
		batches := int64((n + batch - 1) / batch)
		b.ResetTimer()
		for r := range rounds {
			for _, sd := range order(sides, r) {
				p := newProducer(b, sd.br)
				var next atomic.Int64
				var wg sync.WaitGroup
				timed(b, sd, r, func() {
					for range senders {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for next.Add(1) <= batches {
								if _, err := p.SendBatch(context.Background(), msgs); err != nil {
									b.Error(err)
									return
								}
							}
						}()
					}
					wg.Wait()
				})
			}
		}
		report(b, sides, rounds*int(batches)*batch)
	})

	// SendAsync: one sender keeping 1,024 sends in flight.
	b.Run("SendAsync", func(b *testing.B) {
		const window = 1024
		e, sides, _ := setup(b)
		require.NoError(b, e.CreateTopic(context.Background(), "bench", 4))
		m := benchMessage()
		n := chunk(b)
		b.ResetTimer()
		for r := range rounds {
			for _, sd := range order(sides, r) {
				p := newProducer(b, sd.br)
				ring := make([]*equeue.SendFuture, window)
				timed(b, sd, r, func() {
					for i := range n + window {
						if f := ring[i%window]; f != nil {
							if _, err := f.Result(context.Background()); err != nil {
								b.Fatal(err)
							}
							ring[i%window] = nil
						}
						if i < n {
							ring[i%window] = p.SendAsync(context.Background(), m)
						}
					}
				})
			}
		}
		report(b, sides, rounds*n)
	})

	// Consume: a Consumer (default options) drains a backlog of its own
	// 4-queue topic; its start is timed, as in BenchmarkConsume.
	b.Run("Consume", func(b *testing.B) {
		e, sides, settle := setup(b)
		ctx := context.Background()
		n := chunk(b)
		m := benchMessage()
		never := equeue.SyncNever
		for r := range rounds {
			for _, sd := range sides {
				topic := fmt.Sprintf("%s-%d", sd.name, r)
				require.NoError(b, e.CreateTopic(ctx, topic, 4))
				for sent := 0; sent < n; {
					k := min(500, n-sent)
					msgs := make([]*equeue.Message, k)
					for i := range msgs {
						msgs[i] = &equeue.Message{Topic: topic, Body: m.Body}
					}
					_, err := e.Append(ctx, &equeue.AppendRequest{Topic: topic, Queue: sent / 500 % 4, Messages: msgs, Sync: &never})
					require.NoError(b, err)
					sent += k
				}
			}
		}
		settle()
		b.ResetTimer()
		for r := range rounds {
			for _, sd := range order(sides, r) {
				var handled atomic.Int64
				done := make(chan struct{})
				topic := fmt.Sprintf("%s-%d", sd.name, r)
				c, err := equeue.NewConsumer(sd.br, equeue.ConsumerOptions{Group: "g-" + topic,
					Subscriptions: []equeue.Subscription{{Topic: topic}}, From: equeue.ConsumeFromEarliest,
					Handler: func(context.Context, *equeue.Message) error {
						if handled.Add(1) == int64(n) {
							close(done)
						}
						return nil
					}})
				require.NoError(b, err)
				timed(b, sd, r, func() {
					began := time.Now()
					require.NoError(b, c.Start(ctx))
					sd.start += time.Since(began)
					select {
					case <-done:
					case <-time.After(5 * time.Minute):
						b.Fatalf("consumed %d of %d", handled.Load(), n)
					}
				})
				require.NoError(b, c.Close())
			}
		}
		report(b, sides, rounds*n)
		// A round's Start (joining the group, over the wire for remote)
		// weighs more the fewer messages a round consumes.
		for _, sd := range sides {
			b.ReportMetric(float64(sd.start.Microseconds())/rounds, sd.name+"-start-us")
		}
	})
}

// median returns the median of xs (the mean of the middle two for an even
// count); it sorts xs.
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

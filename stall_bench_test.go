package equeue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// phaseStore is a Badger store that records when the engine's DeleteRange
// calls and its Reclaim run, so send latencies can be told apart by what
// the store was doing meanwhile.
type phaseStore struct {
	*store.Badger
	mu      sync.Mutex
	deletes []window
	reclaim []window
	drops   []window
}

type window struct{ start, end time.Time }

func (w window) overlaps(start, end time.Time) bool {
	return start.Before(w.end) && end.After(w.start)
}

func (s *phaseStore) DeleteRange(q store.QueueID, from, to uint64) error {
	start := time.Now()
	err := s.Badger.DeleteRange(q, from, to)
	s.mu.Lock()
	s.deletes = append(s.deletes, window{start, time.Now()})
	s.mu.Unlock()
	return err
}

func (s *phaseStore) DropQueue(q store.QueueID) error {
	start := time.Now()
	err := s.Badger.DropQueue(q)
	s.mu.Lock()
	s.drops = append(s.drops, window{start, time.Now()})
	s.mu.Unlock()
	return err
}

func (s *phaseStore) Reclaim() error {
	start := time.Now()
	err := s.Badger.Reclaim()
	s.mu.Lock()
	s.reclaim = append(s.reclaim, window{start, time.Now()})
	s.mu.Unlock()
	return err
}

// sendSample is one Send: when it started and ended.
type sendSample struct{ start, end time.Time }

// latencyStats returns the median, the p99 and the max latency, in
// milliseconds, of the samples that keep says belong, and how many there
// were.
func latencyStats(samples []sendSample, keep func(sendSample) bool) (p50, p99, most float64, n int) {
	var d []time.Duration
	for _, s := range samples {
		if keep(s) {
			d = append(d, s.end.Sub(s.start))
		}
	}
	if len(d) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	return ms(d[len(d)/2]), ms(d[len(d)*99/100]), ms(d[len(d)-1]), len(d)
}

// stallRun is one engine on a phaseStore with a topic "old" of 1M
// messages, and 4 senders sending one small message per Send
// (SyncAlways) to a topic "live" while the benchmark acts.
type stallRun struct {
	e    *equeue.Engine
	ps   *phaseStore
	mark time.Time // after every "old" message was stored

	stop    atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	samples []sendSample
	sendErr atomic.Value
}

const stallOld = 1_000_000

func startStallRun(b *testing.B) *stallRun {
	ctx := context.Background()
	bs, err := store.OpenBadger(b.TempDir(), nil)
	require.NoError(b, err)
	r := &stallRun{ps: &phaseStore{Badger: bs}}
	r.e, err = equeue.Open("", &equeue.Options{Store: r.ps, Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(b, err)
	require.NoError(b, r.e.CreateTopic(ctx, "old", 1))
	require.NoError(b, r.e.CreateTopic(ctx, "live", 4))
	fillQueue(b, r.e, "old", stallOld)
	// A clear gap between the old messages and the mark.
	time.Sleep(10 * time.Millisecond)
	r.mark = time.Now()

	p, err := equeue.NewProducer(r.e, nil)
	require.NoError(b, err)
	const senders = 4
	for i := range senders {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			var mine []sendSample
			body := fmt.Appendf(nil, "sender %d", i)
			for !r.stop.Load() {
				start := time.Now()
				_, err := p.Send(ctx, &equeue.Message{Topic: "live", Body: body})
				if err != nil {
					r.sendErr.Store(err)
					return
				}
				mine = append(mine, sendSample{start, time.Now()})
			}
			r.mu.Lock()
			r.samples = append(r.samples, mine...)
			r.mu.Unlock()
		}()
	}
	b.Cleanup(func() { _ = p.Close() })
	// Baseline: the senders alone for two seconds.
	time.Sleep(2 * time.Second)
	return r
}

// finish lets the senders run a little longer, so the last phase is
// covered, stops them and closes the engine.
func (r *stallRun) finish(b *testing.B) {
	time.Sleep(200 * time.Millisecond)
	r.stop.Store(true)
	r.wg.Wait()
	if err, _ := r.sendErr.Load().(error); err != nil {
		b.Fatalf("send: %v", err)
	}
	require.NoError(b, r.e.Close())
}

// report reports the median, p99 and max latency of the sends that
// overlap w, under the metric names prefix-p50-ms, ..., and returns how
// many there were.
func (r *stallRun) report(b *testing.B, prefix string, keep func(sendSample) bool) int {
	p50, p99, most, n := latencyStats(r.samples, keep)
	b.ReportMetric(p50, prefix+"-p50-ms")
	b.ReportMetric(p99, prefix+"-p99-ms")
	b.ReportMetric(most, prefix+"-max-ms")
	return n
}

// BenchmarkSendLatencyDuringRetention measures Send latency (SyncAlways,
// 4 senders, one small message per Send) while a retention pass deletes
// 1M messages of another topic and then reclaims their space, beside the
// latency of the same run before the pass. Sends are counted in the phase
// (delete or reclaim) their lifetime overlaps. Run with -benchtime=1x: one
// iteration fills 1M messages.
func BenchmarkSendLatencyDuringRetention(b *testing.B) {
	for b.Loop() {
		r := startStallRun(b)
		passStart := time.Now()
		res, err := r.e.ApplyRetention(context.Background(), equeue.RetentionPolicy{MaxAge: time.Since(r.mark)})
		passEnd := time.Now()
		require.NoError(b, err)
		r.finish(b)
		require.EqualValues(b, stallOld, res.Deleted)

		r.ps.mu.Lock()
		deletes, reclaim := r.ps.deletes, r.ps.reclaim
		r.ps.mu.Unlock()
		require.NotEmpty(b, deletes)
		require.Len(b, reclaim, 1)
		del := window{deletes[0].start, deletes[len(deletes)-1].end}
		nbase := r.report(b, "base", func(s sendSample) bool { return s.end.Before(passStart) })
		ndel := r.report(b, "delete", func(s sendSample) bool { return del.overlaps(s.start, s.end) })
		nrec := r.report(b, "reclaim", func(s sendSample) bool { return reclaim[0].overlaps(s.start, s.end) })
		b.ReportMetric(del.end.Sub(del.start).Seconds(), "delete-s")
		b.ReportMetric(reclaim[0].end.Sub(reclaim[0].start).Seconds(), "reclaim-s")
		b.Logf("sends: %d before the pass, %d during delete (%v), %d during reclaim (%v); pass took %v",
			nbase, ndel, del.end.Sub(del.start), nrec, reclaim[0].end.Sub(reclaim[0].start), passEnd.Sub(passStart))
	}
}

// BenchmarkSendLatencyDuringDeleteTopic measures Send latency as
// BenchmarkSendLatencyDuringRetention does, while DeleteTopic drops a
// topic of 1M messages. Run with -benchtime=1x.
func BenchmarkSendLatencyDuringDeleteTopic(b *testing.B) {
	for b.Loop() {
		r := startStallRun(b)
		start := time.Now()
		require.NoError(b, r.e.DeleteTopic(context.Background(), "old"))
		end := time.Now()
		r.finish(b)

		r.ps.mu.Lock()
		drops := r.ps.drops
		r.ps.mu.Unlock()
		require.Len(b, drops, 1)
		nbase := r.report(b, "base", func(s sendSample) bool { return s.end.Before(start) })
		ndrop := r.report(b, "drop", func(s sendSample) bool { return drops[0].overlaps(s.start, s.end) })
		b.ReportMetric(drops[0].end.Sub(drops[0].start).Seconds(), "drop-s")
		b.Logf("sends: %d before, %d during the drop (%v); DeleteTopic took %v",
			nbase, ndrop, drops[0].end.Sub(drops[0].start), end.Sub(start))
	}
}

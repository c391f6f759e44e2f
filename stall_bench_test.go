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

// BenchmarkSendLatencyDuringRetention measures Send latency (SyncAlways,
// 4 senders, one small message per Send) while a retention pass deletes
// 1M messages of another topic and then reclaims their space, beside the
// latency of the same run before the pass. Sends are counted in the phase
// (delete or reclaim) their lifetime overlaps. Run with -benchtime=1x: one
// iteration fills 1M messages.
func BenchmarkSendLatencyDuringRetention(b *testing.B) {
	const (
		old     = 1_000_000
		senders = 4
	)
	for b.Loop() {
		ctx := context.Background()
		bs, err := store.OpenBadger(b.TempDir(), nil)
		require.NoError(b, err)
		ps := &phaseStore{Badger: bs}
		e, err := equeue.Open("", &equeue.Options{Store: ps, Retention: equeue.RetentionPolicy{Interval: -1}})
		require.NoError(b, err)
		require.NoError(b, e.CreateTopic(ctx, "old", 1))
		require.NoError(b, e.CreateTopic(ctx, "live", 4))
		fillQueue(b, e, "old", old)
		// A clear gap between the old messages and the mark.
		time.Sleep(10 * time.Millisecond)
		mark := time.Now()

		p, err := equeue.NewProducer(e, nil)
		require.NoError(b, err)
		var (
			stop    atomic.Bool
			wg      sync.WaitGroup
			mu      sync.Mutex
			samples []sendSample
			sendErr atomic.Value
		)
		for i := range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []sendSample
				body := fmt.Appendf(nil, "sender %d", i)
				for !stop.Load() {
					start := time.Now()
					_, err := p.Send(ctx, &equeue.Message{Topic: "live", Body: body})
					if err != nil {
						sendErr.Store(err)
						return
					}
					mine = append(mine, sendSample{start, time.Now()})
				}
				mu.Lock()
				samples = append(samples, mine...)
				mu.Unlock()
			}()
		}
		// Baseline: the senders alone for two seconds.
		time.Sleep(2 * time.Second)
		passStart := time.Now()
		res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Since(mark)})
		passEnd := time.Now()
		require.NoError(b, err)
		// And a little more after the pass, so its last phase is covered.
		time.Sleep(200 * time.Millisecond)
		stop.Store(true)
		wg.Wait()
		if err, _ := sendErr.Load().(error); err != nil {
			b.Fatalf("send: %v", err)
		}
		require.EqualValues(b, old, res.Deleted)
		require.NoError(b, p.Close())
		require.NoError(b, e.Close())

		ps.mu.Lock()
		deletes, reclaim := ps.deletes, ps.reclaim
		ps.mu.Unlock()
		require.NotEmpty(b, deletes)
		require.Len(b, reclaim, 1)
		del := window{deletes[0].start, deletes[len(deletes)-1].end}
		base50, basep99, basemax, nbase := latencyStats(samples, func(s sendSample) bool { return s.end.Before(passStart) })
		del50, delp99, delmax, ndel := latencyStats(samples, func(s sendSample) bool { return del.overlaps(s.start, s.end) })
		rec50, recp99, recmax, nrec := latencyStats(samples, func(s sendSample) bool { return reclaim[0].overlaps(s.start, s.end) })
		b.ReportMetric(base50, "base-p50-ms")
		b.ReportMetric(basep99, "base-p99-ms")
		b.ReportMetric(basemax, "base-max-ms")
		b.ReportMetric(del50, "delete-p50-ms")
		b.ReportMetric(delp99, "delete-p99-ms")
		b.ReportMetric(delmax, "delete-max-ms")
		b.ReportMetric(rec50, "reclaim-p50-ms")
		b.ReportMetric(recp99, "reclaim-p99-ms")
		b.ReportMetric(recmax, "reclaim-max-ms")
		b.ReportMetric(del.end.Sub(del.start).Seconds(), "delete-s")
		b.ReportMetric(reclaim[0].end.Sub(reclaim[0].start).Seconds(), "reclaim-s")
		b.Logf("sends: %d before the pass, %d during delete (%v), %d during reclaim (%v); pass took %v",
			nbase, ndel, del.end.Sub(del.start), nrec, reclaim[0].end.Sub(reclaim[0].start), passEnd.Sub(passStart))
	}
}

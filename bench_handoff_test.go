package equeue_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/equeue-go/equeue/store"
)

// The hand-off floor: what 64 goroutines that each wait for their own
// write pay on top of raw Badger, before any engine work.
//
// api=handoff (BenchmarkBaselineBadger, txn=64 only) runs the raw
// baseline's transactions — the same keys and values, one key per record,
// txn.Commit and db.Sync — but the records come from 64 goroutines, one at
// a time each, as BenchmarkSend's senders do: a sender queues its record
// and waits; one committer gathers the queued records (waiting up to
// handoffLinger for all 64 senders to be back, as the engine's writer
// does), commits them as one transaction, syncs, and wakes each sender.
// The committer does nothing else: no encoding, no routing, no IDs, no
// bookkeeping. api=handoff-store is the same with the engine's store
// (store.Badger Write and Sync, records packed into segments) in place of
// raw Badger: the floor of this engine, whose writes are cheaper than the
// baseline's. Its gap to api=badger is what handing records from many
// waiting goroutines to one writer costs on this machine — the goroutine
// wake-ups, parks and queueing that a single goroutine building
// transactions never pays — and so the bound on any engine whose senders
// each wait for their own Send. BenchmarkSend reports the same cycle split
// (cycle-us, sync-us/cycle, write-us/cycle, other-us/cycle).

// handoffSenders is BenchmarkSend's sender count.
const handoffSenders = 64

// handoffLinger bounds the committer's wait for the rest of the senders,
// as the engine's group-commit linger does.
const handoffLinger = 200 * time.Microsecond

type handoffReq struct {
	value []byte
	done  chan struct{}
}

// handoffQueue is the senders' queue. A sender that brings it to want
// wakes the committer; senders below want do not, so the committer is not
// woken once per record.
type handoffQueue struct {
	mu   sync.Mutex
	reqs []*handoffReq
	want int // the committer sleeps until len(reqs) >= want; 0: awake
	wake chan struct{}
}

func (q *handoffQueue) put(r *handoffReq) {
	q.mu.Lock()
	q.reqs = append(q.reqs, r)
	if q.want > 0 && len(q.reqs) >= q.want {
		q.want = 0
		q.wake <- struct{}{} // buffered, and sent once per sleep
	}
	q.mu.Unlock()
}

// take appends the queued records to batch once want are queued, or once
// expire fires (nil: no bound) whatever is queued then; false when stop
// closed first.
func (q *handoffQueue) take(batch []*handoffReq, want int, expire <-chan time.Time, stop <-chan struct{}) ([]*handoffReq, bool) {
	q.mu.Lock()
	for len(q.reqs) < want {
		q.want = want
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-expire:
			want = 0
		case <-stop:
			return batch, false
		}
		q.mu.Lock()
		q.want = 0
		select { // a wake-up sent before want was cleared
		case <-q.wake:
		default:
		}
	}
	batch = append(batch, q.reqs...)
	clear(q.reqs)
	q.reqs = q.reqs[:0]
	q.mu.Unlock()
	return batch, true
}

// handoffTarget is what the committer writes to: raw Badger, one key per
// record, or the engine's store, which packs them into segments.
type handoffTarget struct {
	write func(done, k int) error
	sync  func() error
	close func() error
}

func handoffRaw(b *testing.B, value []byte) handoffTarget {
	db := benchOpenRawBadger(b, b.TempDir())
	var offs [benchQueues]uint64
	return handoffTarget{
		write: func(done, k int) error { return benchRawTxn(db, done, k, &offs, value) },
		sync:  db.Sync,
		close: db.Close,
	}
}

func handoffStore(b *testing.B, value []byte) handoffTarget {
	s, err := store.OpenBadger(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	var offs [benchQueues]uint64
	batch := &store.Batch{}
	return handoffTarget{
		write: func(done, k int) error {
			benchStoreBatch(batch, done, k, &offs, value)
			return s.Write(batch)
		},
		sync:  s.Sync,
		close: s.Close,
	}
}

func benchBaselineHandoff(b *testing.B, synced, toStore bool, size int) {
	value := benchBody(size + benchRecordOverhead)
	target := handoffRaw
	if toStore {
		target = handoffStore
	}
	db := target(b, value)
	q := &handoffQueue{wake: make(chan struct{}, 1)}
	stop := make(chan struct{})
	var (
		committer         sync.WaitGroup
		cycles            int
		txnTime, syncTime time.Duration
		failed            atomic.Pointer[error]
	)
	committer.Go(func() {
		done := 0
		var (
			reqs []*handoffReq
			ok   bool
		)
		linger := time.NewTimer(time.Hour)
		linger.Stop()
		for {
			// Wait for one record, then up to handoffLinger for the rest.
			if reqs, ok = q.take(reqs[:0], 1, nil, stop); !ok {
				return
			}
			if len(reqs) < handoffSenders {
				linger.Reset(handoffLinger)
				if reqs, ok = q.take(reqs, handoffSenders-len(reqs), linger.C, stop); !ok {
					return
				}
				linger.Stop()
			}
			began := time.Now()
			err := db.write(done, len(reqs))
			txnTime += time.Since(began)
			if err == nil && synced {
				began = time.Now()
				err = db.sync()
				syncTime += time.Since(began)
			}
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
			done += len(reqs)
			cycles++
			for _, r := range reqs {
				r.done <- struct{}{}
			}
		}
	})
	var (
		next    atomic.Int64
		senders sync.WaitGroup
	)
	n := int64(b.N)
	b.SetBytes(int64(size))
	b.ResetTimer()
	cpu := benchStartCPU()
	start := time.Now()
	for range handoffSenders {
		senders.Go(func() {
			r := &handoffReq{done: make(chan struct{}, 1)}
			for failed.Load() == nil && next.Add(1) <= n {
				// The sender's own record, as a Send's message is.
				r.value = append(r.value[:0], value...)
				q.put(r)
				<-r.done
			}
		})
	}
	senders.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu.report(b, b.N)
	close(stop)
	committer.Wait()
	if p := failed.Load(); p != nil {
		b.Fatal(*p)
	}
	benchReport(b, b.N, elapsed)
	if cycles > 0 {
		cycle := float64(elapsed.Microseconds()) / float64(cycles)
		b.ReportMetric(float64(b.N)/float64(cycles), "msgs/write")
		if synced {
			syncUs := float64(syncTime.Microseconds()) / float64(cycles)
			writeUs := float64(txnTime.Microseconds()) / float64(cycles)
			b.ReportMetric(cycle, "cycle-us")
			b.ReportMetric(syncUs, "sync-us/cycle")
			b.ReportMetric(writeUs, "write-us/cycle")
			b.ReportMetric(cycle-syncUs-writeUs, "other-us/cycle")
		}
	}
	if err := db.close(); err != nil {
		b.Fatal(err)
	}
}

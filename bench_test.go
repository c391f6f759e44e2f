package equeue_test

// Benchmarks of the engine and of raw Badger baselines next to them.
//
// Every benchmark counts messages: one b.N operation is one message, so
// ns/op is per message and MB/s counts message bodies. Each also reports
// msgs/s. They measure and report; nothing here asserts a timing. Engines
// and stores live in b.TempDir() and are opened, filled and closed outside
// the timer.
//
// The baselines write values as long as the engine's encoded records (see
// benchRecordOverhead) under the engine's record key layout, so the ratio
// engine/baseline shows what the engine adds on top of the store it sits on.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

const (
	benchTopicName = "bench"
	benchQueues    = 4
	// benchRecordOverhead is what the engine's record encoding (version 2,
	// codec.go) adds to the body of a message sent with no ID, tag,
	// properties or TTL: flags (1), checksum (4), born-at (8), stored-at
	// delta (4) and the generated ID's prefix (4); the body needs no length.
	// A routing key adds its length plus 3. The baselines write body+21
	// bytes per record.
	benchRecordOverhead = 21
	// benchRecordKeyLen is the length of a record key: 'm' | topic uint32 BE
	// | queue uint32 BE | offset uint64 BE, as store.Badger lays it out.
	benchRecordKeyLen = 1 + 4 + 4 + 8
	benchMiB          = 1 << 20
)

// benchBodySizes are the message body sizes every throughput benchmark runs with.
var benchBodySizes = []struct {
	name string
	size int
}{
	{"body=100B", 100},
	{"body=1KiB", 1024},
}

func benchBody(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	return ctx
}

// benchOpenEngine opens an engine on dir; a cleanup closes it if the
// benchmark has not (Close is idempotent).
func benchOpenEngine(b *testing.B, dir string, opts *equeue.Options) *equeue.Engine {
	b.Helper()
	e, err := equeue.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	return e
}

// benchNewEngine opens an engine on a fresh temp dir and creates the bench
// topic with benchQueues queues.
func benchNewEngine(b *testing.B, opts *equeue.Options) *equeue.Engine {
	b.Helper()
	e := benchOpenEngine(b, b.TempDir(), opts)
	if err := e.CreateTopic(context.Background(), benchTopicName, benchQueues); err != nil {
		b.Fatal(err)
	}
	return e
}

func benchProducer(b *testing.B, e *equeue.Engine) *equeue.Producer {
	b.Helper()
	p, err := equeue.NewProducer(e, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	return p
}

func benchConsumer(b *testing.B, e *equeue.Engine, h equeue.Handler) *equeue.Consumer {
	b.Helper()
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group:         "bench-group",
		Subscriptions: []equeue.Subscription{{Topic: benchTopicName, Filter: "*"}},
		From:          equeue.ConsumeFromEarliest,
		Handler:       h,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// benchClose closes what the benchmark opened, in order, failing on errors.
func benchClose(b *testing.B, closers ...interface{ Close() error }) {
	b.Helper()
	for _, c := range closers {
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchReport reports the message rate of n messages in elapsed.
func benchReport(b *testing.B, n int, elapsed time.Duration) {
	if elapsed > 0 {
		b.ReportMetric(float64(n)/elapsed.Seconds(), "msgs/s")
	}
}

// benchCPU measures the process's CPU time from its start until report.
type benchCPU struct {
	start time.Duration
	ok    bool
}

func benchStartCPU() benchCPU {
	d, ok := benchProcessCPU()
	return benchCPU{start: d, ok: ok}
}

// report reports the process CPU time per message ("cpu-ns/msg") since
// the start, over n messages: all goroutines, including the store's
// background work.
func (c benchCPU) report(b *testing.B, n int) {
	end, ok := benchProcessCPU()
	if c.ok && ok && n > 0 {
		b.ReportMetric(float64(end-c.start)/float64(n), "cpu-ns/msg")
	}
}

// benchFirstErr keeps the first error of several goroutines.
type benchFirstErr struct {
	mu     sync.Mutex
	err    error
	failed atomic.Bool
}

func (f *benchFirstErr) set(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
	f.failed.Store(true)
}

func (f *benchFirstErr) check(b *testing.B) {
	b.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		b.Fatal(f.err)
	}
}

// benchQueueKeys returns one routing key per queue: keys whose FNV-1a hash
// (what the default KeyHashSelector uses) falls on queue 0, 1, 2 and 3, so
// senders using them in turn spread evenly over the topic's queues.
func benchQueueKeys() [][]string {
	keys := make([][]string, benchQueues)
	for i, found := 0, 0; found < benchQueues; i++ {
		k := "key-" + strconv.Itoa(i)
		h := fnv.New32a()
		_, _ = h.Write([]byte(k))
		if q := h.Sum32() % benchQueues; keys[q] == nil {
			keys[q] = []string{k}
			found++
		}
	}
	return keys
}

// benchSendBatches sends total keyless messages with SendBatch from workers
// goroutines, each call carrying up to chunk messages (the default selector
// sends successive batches to the queues in turn).
func benchSendBatches(ctx context.Context, p *equeue.Producer, total, chunk, workers int, body []byte) error {
	var (
		claimed atomic.Int64
		errs    benchFirstErr
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for !errs.failed.Load() {
				from := int(claimed.Add(int64(chunk))) - chunk
				if from >= total {
					return
				}
				msgs := make([]*equeue.Message, min(chunk, total-from))
				for i := range msgs {
					msgs[i] = &equeue.Message{Topic: benchTopicName, Body: body}
				}
				if _, err := p.SendBatch(ctx, msgs); err != nil {
					errs.set(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errs.err
}

// BenchmarkIdleRSS reports the resident memory of a process holding an idle
// engine: one opened with default options on a temp dir, with a topic that
// received 10,000 messages of 100 bytes and then sat idle. It runs once
// (b.Loop): the loop body only sleeps, so the idle period lasts the bench
// time and at least 2 s; ns/op means nothing here.
//
// Metrics (VmRSS from /proc/self/status, so Linux only):
//   - base-rss-MiB: before the engine is opened. It is the test binary
//     itself (Go runtime, test framework, packages); it counts in every
//     figure below too, so the engine's share is rss-MiB - base-rss-MiB.
//   - rss-MiB: after the idle period and a runtime.GC(), engine still open.
//   - rss-scavenged-MiB: the same after debug.FreeOSMemory(), which returns
//     freed heap pages to the OS at once, as the runtime's background
//     scavenger would in time.
//   - go-heap-inuse-MiB: the Go heap in use at that point (Badger's
//     memtables and caches are in the Go heap or in mmapped files).
//
// It is declared first so that it runs before the heavier benchmarks when
// the whole file runs; run it alone (-bench IdleRSS) for the cleanest figure.
func BenchmarkIdleRSS(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads VmRSS from /proc/self/status, which only Linux has")
	}
	ctx := benchCtx(b)
	runtime.GC()
	base := benchRSS(b)

	e := benchNewEngine(b, nil)
	p := benchProducer(b, e)
	if err := benchSendAsyncAll(ctx, p, 10000, benchBody(100)); err != nil {
		b.Fatal(err)
	}

	idleFrom := time.Now()
	for b.Loop() {
		time.Sleep(100 * time.Millisecond)
	}
	if rest := 2*time.Second - time.Since(idleFrom); rest > 0 {
		time.Sleep(rest)
	}
	runtime.GC()
	rss := benchRSS(b)
	debug.FreeOSMemory()
	scavenged := benchRSS(b)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)

	b.ReportMetric(float64(base)/benchMiB, "base-rss-MiB")
	b.ReportMetric(float64(rss)/benchMiB, "rss-MiB")
	b.ReportMetric(float64(scavenged)/benchMiB, "rss-scavenged-MiB")
	b.ReportMetric(float64(ms.HeapInuse)/benchMiB, "go-heap-inuse-MiB")
	benchClose(b, p, e)
}

// benchSendAsyncAll starts n keyless SendAsync calls and waits for them all.
func benchSendAsyncAll(ctx context.Context, p *equeue.Producer, n int, body []byte) error {
	futs := make([]*equeue.SendFuture, 0, n)
	for range n {
		futs = append(futs, p.SendAsync(ctx, &equeue.Message{Topic: benchTopicName, Body: body}))
	}
	for _, f := range futs {
		if _, err := f.Result(ctx); err != nil {
			return err
		}
	}
	return nil
}

// benchRSS returns the process's resident set size in bytes.
func benchRSS(b *testing.B) int64 {
	b.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skipf("cannot read RSS: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("VmRSS:")) {
			continue
		}
		// "VmRSS:	   12345 kB"
		fields := bytes.Fields(line[len("VmRSS:"):])
		if len(fields) != 2 || string(fields[1]) != "kB" {
			b.Fatalf("unexpected VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			b.Fatalf("unexpected VmRSS line %q: %v", line, err)
		}
		return kb << 10
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	b.Skip("no VmRSS line in /proc/self/status")
	return 0
}

// BenchmarkSend measures Producer.Send: one sender, or 64 goroutines sharing
// b.N sends (each sender uses one routing key; the keys cover the 4 queues
// evenly), under SyncAlways (every Send waits for its fsync; concurrent
// sends share one) and SyncNever.
func BenchmarkSend(b *testing.B) {
	cases := []struct {
		name    string
		policy  equeue.SyncPolicy
		senders int
	}{
		{"SyncAlways/senders=1", equeue.SyncAlways, 1},
		{"SyncAlways/senders=64", equeue.SyncAlways, 64},
		{"SyncNever/senders=64", equeue.SyncNever, 64},
	}
	for _, c := range cases {
		for _, bs := range benchBodySizes {
			b.Run(c.name+"/"+bs.name, func(b *testing.B) {
				benchSend(b, c.policy, c.senders, bs.size)
			})
		}
	}
}

func benchSend(b *testing.B, policy equeue.SyncPolicy, senders, size int) {
	ctx := benchCtx(b)
	e := benchNewEngine(b, &equeue.Options{Sync: policy})
	p := benchProducer(b, e)
	body := benchBody(size)
	var keys [][]string // a single sender sends keyless: round robin
	if senders > 1 {
		keys = benchQueueKeys()
	}
	var (
		next atomic.Int64
		errs benchFirstErr
		wg   sync.WaitGroup
	)
	n := int64(b.N)
	b.SetBytes(int64(size))
	syncs0, writes0 := equeue.GroupCommitSyncs(e), equeue.StoreWrites(e)
	wtime0, stime0 := equeue.StoreTimes(e)
	b.ResetTimer()
	cpu := benchStartCPU()
	start := time.Now()
	for g := range senders {
		var k []string
		if keys != nil {
			k = keys[g%len(keys)]
		}
		wg.Go(func() {
			for !errs.failed.Load() && next.Add(1) <= n {
				if _, err := p.Send(ctx, &equeue.Message{Topic: benchTopicName, Keys: k, Body: body}); err != nil {
					errs.set(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu.report(b, b.N)
	errs.check(b)
	benchReport(b, b.N, elapsed)
	if syncs := equeue.GroupCommitSyncs(e) - syncs0; syncs > 0 {
		b.ReportMetric(float64(b.N)/float64(syncs), "msgs/sync")
		// A group commit's cycle, from one Sync's start to the next: the
		// Sync, the store write, and the rest (completing the senders, their
		// next Sends, the writer gathering and applying them).
		wtime, stime := equeue.StoreTimes(e)
		cycle := float64(elapsed.Microseconds()) / float64(syncs)
		syncUs := float64((stime - stime0).Microseconds()) / float64(syncs)
		writeUs := float64((wtime - wtime0).Microseconds()) / float64(syncs)
		b.ReportMetric(cycle, "cycle-us")
		b.ReportMetric(syncUs, "sync-us/cycle")
		b.ReportMetric(writeUs, "write-us/cycle")
		b.ReportMetric(cycle-syncUs-writeUs, "other-us/cycle")
	}
	if writes := equeue.StoreWrites(e) - writes0; writes > 0 {
		b.ReportMetric(float64(b.N)/float64(writes), "msgs/write")
		// The share of the run the writer spent in store writes: near 1,
		// the writer's loop is what bounds the rate.
		wtime, _ := equeue.StoreTimes(e)
		b.ReportMetric(float64(wtime-wtime0)/float64(elapsed), "write-share")
		b.ReportMetric(float64((wtime-wtime0).Microseconds())/float64(writes), "us/write")
	}
	benchClose(b, p, e)
}

// BenchmarkSendPipelined measures pipelined sending under SyncAlways: one
// goroutine keeping up to 4096 SendAsync futures in flight (it waits for the
// oldest when the window is full), and 4 goroutines calling SendBatch with
// 1024 messages per call.
func BenchmarkSendPipelined(b *testing.B) {
	for _, bs := range benchBodySizes {
		b.Run("SyncAlways/async-window=4096/"+bs.name, func(b *testing.B) {
			benchSendAsync(b, 4096, bs.size)
		})
	}
	for _, bs := range benchBodySizes {
		b.Run("SyncAlways/batch=1024x4/"+bs.name, func(b *testing.B) {
			ctx := benchCtx(b)
			e := benchNewEngine(b, nil)
			p := benchProducer(b, e)
			body := benchBody(bs.size)
			b.SetBytes(int64(bs.size))
			syncs0 := equeue.GroupCommitSyncs(e)
			b.ResetTimer()
			start := time.Now()
			err := benchSendBatches(ctx, p, b.N, 1024, 4, body)
			elapsed := time.Since(start)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			benchReport(b, b.N, elapsed)
			if syncs := equeue.GroupCommitSyncs(e) - syncs0; syncs > 0 {
				b.ReportMetric(float64(b.N)/float64(syncs), "msgs/sync")
			}
			benchClose(b, p, e)
		})
	}
}

func benchSendAsync(b *testing.B, window, size int) {
	ctx := benchCtx(b)
	e := benchNewEngine(b, nil)
	p := benchProducer(b, e)
	body := benchBody(size)
	ring := make([]*equeue.SendFuture, window)
	head, inFlight := 0, 0
	wait := func() {
		f := ring[head]
		ring[head] = nil
		head = (head + 1) % window
		inFlight--
		if _, err := f.Result(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if inFlight == window {
			wait()
		}
		ring[(head+inFlight)%window] = p.SendAsync(ctx, &equeue.Message{Topic: benchTopicName, Body: body})
		inFlight++
	}
	for inFlight > 0 {
		wait()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	benchReport(b, b.N, elapsed)
	benchClose(b, p, e)
}

// benchRawBadgerOptions are Badger options equal to what store.OpenBadger
// derives from store.DefaultBadgerOptions(), for opening Badger directly.
func benchRawBadgerOptions(dir string) badger.Options {
	d := store.DefaultBadgerOptions()
	return badger.DefaultOptions(dir).
		WithLogger(nil).
		WithSyncWrites(false).
		WithDetectConflicts(false).
		WithNumVersionsToKeep(1).
		WithMetricsEnabled(false).
		WithMemTableSize(d.MemTableSize).
		WithNumMemtables(d.NumMemtables).
		WithNumLevelZeroTables(d.NumLevelZeroTables).
		WithNumLevelZeroTablesStall(d.NumLevelZeroTablesStall).
		WithBlockCacheSize(d.BlockCacheSize).
		WithIndexCacheSize(d.IndexCacheSize).
		WithValueThreshold(d.ValueThreshold).
		WithValueLogFileSize(d.ValueLogFileSize).
		WithNumCompactors(d.NumCompactors).
		WithCompression(options.None)
}

func benchOpenRawBadger(b *testing.B, dir string) *badger.DB {
	b.Helper()
	db, err := badger.Open(benchRawBadgerOptions(dir))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if !db.IsClosed() {
			_ = db.Close()
		}
	})
	return db
}

// benchRecordKey appends the record key of (topic, queue, off) to dst.
func benchRecordKey(dst []byte, topic, queue uint32, off uint64) []byte {
	dst = append(dst, 'm')
	dst = binary.BigEndian.AppendUint32(dst, topic)
	dst = binary.BigEndian.AppendUint32(dst, queue)
	return binary.BigEndian.AppendUint64(dst, off)
}

// BenchmarkBaselineBadger writes records of the engine's encoded size
// (body + benchRecordOverhead) from one goroutine in transactions of 64 or
// 1024 records, spread round robin over 4 queues under the engine's key
// layout, with a Sync after every transaction or none.
//
// api=badger is raw Badger, the baseline the engine's targets are stated
// against: one key per record (txn.SetEntry, txn.Commit, db.Sync) with the
// options store.OpenBadger derives from its defaults. api=store goes through
// store.Badger (Write + Sync: the store the engine sits on), which packs the
// consecutive records of a queue into segments, one key per segment; it
// shows what the store alone does with the same records. api=handoff
// (txn=64 only) is raw Badger fed by 64 waiting goroutines, the floor of
// any engine whose senders wait for their own Send, and api=handoff-store
// the same over the engine's store (bench_handoff_test.go).
func BenchmarkBaselineBadger(b *testing.B) {
	cases := []struct {
		name   string
		txn    int
		synced bool
	}{
		{"txn=64/synced", 64, true},
		{"txn=64/unsynced", 64, false},
		{"txn=1024/synced", 1024, true},
	}
	for _, c := range cases {
		for _, api := range []string{"store", "badger", "handoff", "handoff-store"} {
			if (api == "handoff" || api == "handoff-store") && c.txn != handoffSenders {
				continue
			}
			for _, bs := range benchBodySizes {
				b.Run(c.name+"/api="+api+"/"+bs.name, func(b *testing.B) {
					switch api {
					case "store":
						benchBaselineStore(b, c.txn, c.synced, bs.size)
					case "badger":
						benchBaselineRaw(b, c.txn, c.synced, bs.size)
					default:
						benchBaselineHandoff(b, c.synced, api == "handoff-store", bs.size)
					}
				})
			}
		}
	}
}

func benchBaselineStore(b *testing.B, txn int, synced bool, size int) {
	s, err := store.OpenBadger(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	value := benchBody(size + benchRecordOverhead)
	batch := &store.Batch{Entries: make([]store.Entry, 0, txn)}
	var offs [benchQueues]uint64
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		k := min(txn, b.N-done)
		benchStoreBatch(batch, done, k, &offs, value)
		if err := s.Write(batch); err != nil {
			b.Fatal(err)
		}
		if synced {
			if err := s.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		done += k
	}
	elapsed := time.Since(start)
	b.StopTimer()
	benchReport(b, b.N, elapsed)
	benchClose(b, s)
}

func benchBaselineRaw(b *testing.B, txnSize int, synced bool, size int) {
	db := benchOpenRawBadger(b, b.TempDir())
	value := benchBody(size + benchRecordOverhead)
	var offs [benchQueues]uint64
	b.SetBytes(int64(size))
	b.ResetTimer()
	cpu := benchStartCPU()
	start := time.Now()
	var syncTime time.Duration
	cycles := 0
	for done := 0; done < b.N; {
		k := min(txnSize, b.N-done)
		if err := benchRawTxn(db, done, k, &offs, value); err != nil {
			b.Fatal(err)
		}
		if synced {
			began := time.Now()
			if err := db.Sync(); err != nil {
				b.Fatal(err)
			}
			syncTime += time.Since(began)
		}
		done += k
		cycles++
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cpu.report(b, b.N)
	benchReport(b, b.N, elapsed)
	if synced {
		// The same split as BenchmarkSend's: a cycle is a transaction and
		// its Sync.
		cycle := float64(elapsed.Microseconds()) / float64(cycles)
		syncUs := float64(syncTime.Microseconds()) / float64(cycles)
		b.ReportMetric(cycle, "cycle-us")
		b.ReportMetric(syncUs, "sync-us/cycle")
		b.ReportMetric(cycle-syncUs, "write-us/cycle")
	}
	benchClose(b, db)
}

// benchFill stores n messages of size bytes in the bench topic of a new
// engine in dir (SyncNever, SendBatch of 1024 from 4 goroutines, so the 4
// queues get about n/4 each) and closes the engine, which flushes Badger's
// memtables to tables: both read benchmarks start from the same state.
func benchFill(b *testing.B, dir string, n, size int) {
	b.Helper()
	ctx := benchCtx(b)
	e := benchOpenEngine(b, dir, &equeue.Options{Sync: equeue.SyncNever})
	if err := e.CreateTopic(ctx, benchTopicName, benchQueues); err != nil {
		b.Fatal(err)
	}
	p := benchProducer(b, e)
	if err := benchSendBatches(ctx, p, n, 1024, 4, benchBody(size)); err != nil {
		b.Fatal(err)
	}
	benchClose(b, p, e)
	// Settle the LSM tree, as benchRawFill does: otherwise the compaction
	// of the fill's level-0 tables runs in some rounds while the reads are
	// timed (2.5 µs of CPU per message consumed against 1.0 in the others).
	st, err := store.OpenBadger(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Reclaim(); err != nil {
		b.Fatal(err)
	}
	benchClose(b, st)
}

// BenchmarkConsume measures a Consumer (clustering, ConsumeFromEarliest,
// defaults: 16 handler goroutines, pulls of 128, periodic commits) with a
// no-op handler draining b.N messages of 100 bytes stored beforehand in 4
// queues. The time runs from Start until the handler has seen b.N messages.
func BenchmarkConsume(b *testing.B) {
	b.Run("body=100B", func(b *testing.B) {
		const size = 100
		ctx := benchCtx(b)
		dir := b.TempDir()
		benchFill(b, dir, b.N, size)
		e := benchOpenEngine(b, dir, nil)
		n := int64(b.N)
		var seen atomic.Int64
		done := make(chan struct{})
		c := benchConsumer(b, e, func(context.Context, *equeue.Message) error {
			if seen.Add(1) == n {
				close(done)
			}
			return nil
		})
		b.SetBytes(size)
		b.ResetTimer()
		start, cpu := time.Now(), benchStartCPU()
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		started := time.Since(start)
		select {
		case <-done:
		case <-ctx.Done():
			b.Fatalf("handler saw %d of %d messages", seen.Load(), n)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		benchReport(b, b.N, elapsed)
		cpu.report(b, b.N)
		b.ReportMetric(float64(started.Microseconds()), "start-us")
		benchClose(b, c, e)
	})
}

// BenchmarkPull reads the messages BenchmarkConsume consumes with
// Engine.Pull alone, as BenchmarkBaselineBadgerRead reads its records: one
// goroutine, pulls of 32 (and of 128, a Consumer's default, under
// pull=128), the 4 queues round robin, no consumer. Next to the baseline
// of the same pull size it shows what the engine's read path (fencing
// aside) adds: the store's segments, decoding, filters and TTL checks.
func BenchmarkPull(b *testing.B) {
	for _, pull := range []int{32, 128} {
		name := "body=100B"
		if pull != 32 {
			name = "pull=" + strconv.Itoa(pull) + "/body=100B"
		}
		benchPull(b, name, pull)
	}
}

func benchPull(b *testing.B, name string, pull int) {
	b.Run(name, func(b *testing.B) {
		const size = 100
		ctx := benchCtx(b)
		dir := b.TempDir()
		benchFill(b, dir, b.N, size)
		e := benchOpenEngine(b, dir, nil)
		var (
			read      int
			next      [benchQueues]int64
			exhausted [benchQueues]bool
			left      = benchQueues
		)
		b.SetBytes(size)
		b.ResetTimer()
		start, cpu := time.Now(), benchStartCPU()
		for q := 0; read < b.N; q = (q + 1) % benchQueues {
			if exhausted[q] {
				continue
			}
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: benchTopicName, Queue: q, Offset: next[q], Max: pull})
			if err != nil {
				b.Fatal(err)
			}
			if res.Status != equeue.PullFound {
				exhausted[q] = true
				if left--; left == 0 {
					b.Fatalf("read %d of %d messages", read, b.N)
				}
				continue
			}
			next[q] = res.NextOffset
			read += len(res.Messages)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		benchReport(b, read, elapsed)
		cpu.report(b, read)
		benchClose(b, e)
	})
}

// BenchmarkBaselineBadgerRead reads as many records as BenchmarkConsume
// consumes, of the engine's encoded size for 100-byte bodies, with Badger
// directly: written one key per record (raw Badger, transactions of 1,024
// round robin over 4 queues, database closed and reopened, as the engine's
// fill is), then per pull one short read transaction (db.View) with an
// iterator without value prefetching, seeking to the queue's next offset
// and copying out up to 32 values (ValueCopy; 128 under pull=128, the
// size of a Consumer's default pulls), the queues taken round robin.
func BenchmarkBaselineBadgerRead(b *testing.B) {
	for _, pull := range []int{32, 128} {
		name := "body=100B"
		if pull != 32 {
			name = "pull=" + strconv.Itoa(pull) + "/body=100B"
		}
		benchBaselineRead(b, name, pull)
	}
}

func benchBaselineRead(b *testing.B, name string, pull int) {
	b.Run(name, func(b *testing.B) {
		const size = 100
		dir := b.TempDir()
		benchRawFill(b, dir, b.N, size+benchRecordOverhead)
		db := benchOpenRawBadger(b, dir)
		topic, next := benchQueueStarts(b, db)
		var (
			read      int
			exhausted [benchQueues]bool
			left      = benchQueues
			vals      = make([][]byte, 0, pull)
		)
		b.SetBytes(size)
		b.ResetTimer()
		start, cpu := time.Now(), benchStartCPU()
		for q := 0; read < b.N; q = (q + 1) % benchQueues {
			if exhausted[q] {
				continue
			}
			var err error
			vals, next[q], err = benchRawPull(db, topic, uint32(q), next[q], pull, vals[:0])
			if err != nil {
				b.Fatal(err)
			}
			if len(vals) == 0 {
				exhausted[q] = true
				if left--; left == 0 {
					b.Fatalf("read %d of %d messages", read, b.N)
				}
			}
			read += len(vals)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		benchReport(b, read, elapsed)
		cpu.report(b, read)
		benchClose(b, db)
	})
}

// benchRawFill writes n values of size bytes with raw Badger in dir, one
// key per value under the engine's record key layout (topic 1, queues round
// robin), 1,024 per transaction, and closes the database.
func benchRawFill(b *testing.B, dir string, n, size int) {
	b.Helper()
	db := benchOpenRawBadger(b, dir)
	value := benchBody(size)
	var offs [benchQueues]uint64
	for done := 0; done < n; {
		k := min(1024, n-done)
		if err := benchRawTxn(db, done, k, &offs, value); err != nil {
			b.Fatal(err)
		}
		done += k
	}
	benchClose(b, db)
	// Settle the LSM tree (benchFill does the same for the engine's store).
	db = benchOpenRawBadger(b, dir)
	if err := db.Flatten(1); err != nil {
		b.Fatal(err)
	}
	benchClose(b, db)
}

// benchRawTxn writes k copies of value with raw Badger in one transaction,
// one key per value: records done, done+1, ... of topic 1 go to the queues
// round robin at the offsets in offs, which it advances.
func benchRawTxn(db *badger.DB, done, k int, offs *[benchQueues]uint64, value []byte) error {
	// Badger holds on to the keys until the commit: one buffer per
	// transaction, sized up front so they never move (as the store does).
	keys := make([]byte, 0, k*benchRecordKeyLen)
	txn := db.NewTransaction(true)
	defer txn.Discard()
	for i := range k {
		q := (done + i) % benchQueues
		at := len(keys)
		keys = benchRecordKey(keys, 1, uint32(q), offs[q])
		offs[q]++
		if err := txn.SetEntry(badger.NewEntry(keys[at:len(keys):len(keys)], value)); err != nil {
			return err
		}
	}
	return txn.Commit()
}

// benchStoreBatch fills batch with k copies of value for store.Badger, as
// benchRawTxn lays them out: records done, done+1, ... of topic 1 go to the
// queues round robin at the offsets in offs, which it advances.
func benchStoreBatch(batch *store.Batch, done, k int, offs *[benchQueues]uint64, value []byte) {
	batch.Entries = batch.Entries[:0]
	for i := range k {
		q := (done + i) % benchQueues
		batch.Entries = append(batch.Entries, store.Entry{
			Queue: store.QueueID{Topic: 1, Queue: uint32(q)}, Offset: offs[q], Value: value,
		})
		offs[q]++
	}
}

// benchQueueStarts finds the store topic ID of the only topic in db (from
// its first record key) and the first offset of each of its queues (0 for
// an empty queue).
func benchQueueStarts(b *testing.B, db *badger.DB) (uint32, [benchQueues]uint64) {
	b.Helper()
	var (
		topic uint32
		first [benchQueues]uint64
	)
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: []byte{'m'}})
		defer it.Close()
		it.Rewind()
		if !it.Valid() {
			return errors.New("no record keys")
		}
		topic = binary.BigEndian.Uint32(it.Item().Key()[1:5])
		for q := range benchQueues {
			prefix := benchRecordKey(nil, topic, uint32(q), 0)[:benchRecordKeyLen-8]
			it.Seek(prefix)
			if it.ValidForPrefix(prefix) { // else the queue is empty (tiny b.N)
				first[q] = binary.BigEndian.Uint64(it.Item().Key()[benchRecordKeyLen-8:])
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return topic, first
}

// benchRawPull reads up to max values of queue q from offset from in one
// read transaction and returns them with the offset to read next.
func benchRawPull(db *badger.DB, topic, q uint32, from uint64, max int, out [][]byte) ([][]byte, uint64, error) {
	next := from
	err := db.View(func(txn *badger.Txn) error {
		prefix := benchRecordKey(nil, topic, q, 0)[:benchRecordKeyLen-8]
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix})
		defer it.Close()
		for it.Seek(benchRecordKey(nil, topic, q, from)); it.Valid() && len(out) < max; it.Next() {
			item := it.Item()
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			out = append(out, v)
			next = binary.BigEndian.Uint64(item.Key()[benchRecordKeyLen-8:]) + 1
		}
		return nil
	})
	return out, next, err
}

// BenchmarkLatency measures send-to-handler latency (time.Since(BornAt) in
// the handler; BornAt is set just before SendAsync) at a steady rate of
// 10,000 msgs/s: every 1 ms tick of a ticker the sender starts 10
// SendAsync calls. A consumer (defaults, ConsumeFromEarliest) runs from
// before the first send.
//
// One b.Loop iteration is one paced message and the function runs once, so
// the sending phase lasts about the bench time (-benchtime 3s: ~3.6 s,
// ~36,000 messages) rather than a fixed 2 s: with a fixed-length phase
// the b.N ramp-up would never reach the bench time. With -benchtime Nx it
// sends N messages only. ns/op is the pacing interval (~100 µs); the
// figures are p50-us and p99-us (microseconds) and msgs/s, the rate
// actually achieved.
func BenchmarkLatency(b *testing.B) {
	policies := []struct {
		name   string
		policy equeue.SyncPolicy
	}{
		{"SyncAlways", equeue.SyncAlways},
		{"SyncNever", equeue.SyncNever},
	}
	for _, pol := range policies {
		for _, bs := range benchBodySizes {
			b.Run(pol.name+"/rate=10k/"+bs.name, func(b *testing.B) {
				benchLatency(b, pol.policy, bs.size, false)
			})
		}
	}
	// Open-loop senders that block: each message is sent by a goroutine of
	// its own calling Send, as HTTP handlers would, so no sender comes back
	// for the next fsync.
	for _, pol := range policies {
		b.Run(pol.name+"/rate=10k/blocking/body=100B", func(b *testing.B) {
			benchLatency(b, pol.policy, 100, true)
		})
	}
}

// benchLatency sends 10 messages per millisecond with SendAsync, or with
// blocking, each from a goroutine of its own calling Send.
func benchLatency(b *testing.B, policy equeue.SyncPolicy, size int, blocking bool) {
	const perTick = 10
	ctx := benchCtx(b)
	e := benchNewEngine(b, &equeue.Options{Sync: policy})
	p := benchProducer(b, e)
	var (
		mu    sync.Mutex
		lats  = make([]time.Duration, 0, 1<<16)
		seen  atomic.Int64
		syncs []time.Duration // the engine's Sync durations (completer only)
	)
	equeue.ObserveSyncs(e, func(d time.Duration) { syncs = append(syncs, d) })
	c := benchConsumer(b, e, func(_ context.Context, m *equeue.Message) error {
		d := time.Since(m.BornAt)
		mu.Lock()
		lats = append(lats, d)
		mu.Unlock()
		seen.Add(1)
		return nil
	})
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	body := benchBody(size)
	futs := make([]*equeue.SendFuture, 0, 1<<16)
	var (
		senders sync.WaitGroup
		errs    benchFirstErr
	)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.SetBytes(int64(size))
	sent := 0
	for b.Loop() {
		if sent%perTick == 0 {
			<-tick.C
		}
		m := &equeue.Message{Topic: benchTopicName, Body: body, BornAt: time.Now()}
		if blocking {
			senders.Go(func() {
				if _, err := p.Send(ctx, m); err != nil {
					errs.set(err)
				}
			})
		} else {
			futs = append(futs, p.SendAsync(ctx, m))
		}
		sent++
	}
	elapsed := b.Elapsed()
	senders.Wait()
	errs.check(b)
	for _, f := range futs {
		if _, err := f.Result(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for seen.Load() < int64(sent) {
		if ctx.Err() != nil {
			b.Fatalf("handler saw %d of %d messages", seen.Load(), sent)
		}
		time.Sleep(time.Millisecond)
	}
	benchClose(b, c, p, e)

	slices.Sort(lats)
	pct := func(p int) float64 {
		i := min(len(lats)*p/100, len(lats)-1)
		return float64(lats[i]) / float64(time.Microsecond)
	}
	b.ReportMetric(pct(50), "p50-us")
	b.ReportMetric(pct(99), "p99-us")
	if len(syncs) > 0 { // the store's part of the tail
		slices.Sort(syncs)
		b.ReportMetric(float64(syncs[len(syncs)/2])/float64(time.Microsecond), "sync-p50-us")
		b.ReportMetric(float64(syncs[len(syncs)*99/100])/float64(time.Microsecond), "sync-p99-us")
		b.ReportMetric(float64(syncs[len(syncs)-1])/float64(time.Microsecond), "sync-max-us")
	}
	benchReport(b, sent, elapsed)
}

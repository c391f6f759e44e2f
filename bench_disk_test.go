package equeue_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// benchDiskMessages is how many messages BenchmarkDiskBytesPerMessage
// writes: EQUEUE_BENCH_DISK_MSGS when set (1000000 for the figure the
// README quotes), else 100,000 so that a plain -bench run stays short.
func benchDiskMessages(b *testing.B) int {
	if s := os.Getenv("EQUEUE_BENCH_DISK_MSGS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("EQUEUE_BENCH_DISK_MSGS=%q: want a positive count", s)
		}
		return n
	}
	return 100_000
}

// BenchmarkDiskBytesPerMessage reports what a message costs on disk: it
// sends n messages (benchDiskMessages) with random, incompressible bodies
// and no ID, key, tag or properties to a 4-queue topic of a new engine
// (SyncNever, SendBatch of up to 1,024 from 4 goroutines), closes the engine,
// reopens the Badger store and runs its Reclaim (memtable flush, LSM
// flatten, value-log GC: what retention runs), then measures the directory
// (store.Badger.Size: allocated bytes of every file in it).
//
// Metrics: disk-B/msg (directory bytes / n), x-payload (that over the body
// size), and base-B/msg: the same measure for raw Badger holding only the
// bodies, one key per message under the engine's 17-byte record key layout,
// written in transactions of 1,024 and compacted alike. The engine stores
// records in segments, so it can come in below that baseline.
//
// Each iteration does all of it once in a new directory; run with
// -benchtime=1x. The compression sub-benchmarks show the effect of
// BadgerOptions.Compression on the same data.
func BenchmarkDiskBytesPerMessage(b *testing.B) {
	for _, bs := range benchBodySizes {
		for _, c := range []store.Compression{store.CompressionNone, store.CompressionSnappy, store.CompressionZSTD} {
			b.Run(bs.name+"/compression="+c.String(), func(b *testing.B) {
				n := benchDiskMessages(b)
				for b.Loop() {
					engine := benchDiskEngine(b, n, bs.size, c)
					base := benchDiskRaw(b, n, bs.size)
					b.ReportMetric(float64(engine)/float64(n), "disk-B/msg")
					b.ReportMetric(float64(engine)/float64(n)/float64(bs.size), "x-payload")
					b.ReportMetric(float64(base)/float64(n), "base-B/msg")
				}
			})
		}
	}
}

// benchDiskBodies returns a random buffer that bodies of size bytes are cut
// from at random offsets, so no two messages share their bytes.
func benchDiskBodies(size int) []byte {
	r := rand.New(rand.NewPCG(1, uint64(size)))
	buf := make([]byte, 16<<20)
	for i := 0; i+8 <= len(buf); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			buf[i+j] = byte(v >> (8 * j))
		}
	}
	return buf
}

// benchDiskBadgerOptions are the default Badger options with compression
// c and, when EQUEUE_BENCH_DISK_VALUE_THRESHOLD is set, that value
// threshold in bytes (segments are packed up to it, so it sets how many
// records share a key).
func benchDiskBadgerOptions(c store.Compression) *store.BadgerOptions {
	o := store.DefaultBadgerOptions()
	o.Compression = c
	if s := os.Getenv("EQUEUE_BENCH_DISK_VALUE_THRESHOLD"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			o.ValueThreshold = n
		}
	}
	return &o
}

// benchDiskEngine writes n messages through an engine and returns the
// directory's size after a Reclaim.
func benchDiskEngine(b *testing.B, n, size int, c store.Compression) int64 {
	b.Helper()
	ctx := benchCtx(b)
	dir := b.TempDir()
	e, err := equeue.Open(dir, &equeue.Options{Sync: equeue.SyncNever, Badger: benchDiskBadgerOptions(c)})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.CreateTopic(ctx, benchTopicName, benchQueues); err != nil {
		b.Fatal(err)
	}
	p := benchProducer(b, e)
	if err := benchDiskSend(ctx, p, n, size); err != nil {
		b.Fatal(err)
	}
	benchClose(b, p, e)
	return benchDiskReclaimed(b, dir, c)
}

// benchDiskSend sends n messages with distinct random bodies of size bytes.
func benchDiskSend(ctx context.Context, p *equeue.Producer, n, size int) error {
	// Batches of 1,024, or of 256 KiB of bodies if less: a batch must fit
	// one store write, whose byte limit is lower with a higher value
	// threshold (EQUEUE_BENCH_DISK_VALUE_THRESHOLD).
	const workers = 4
	chunk := int64(min(1024, (256<<10)/size))
	buf := benchDiskBodies(size)
	var (
		claimed atomic.Int64
		errs    benchFirstErr
		wg      sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for !errs.failed.Load() {
				from := int(claimed.Add(chunk) - chunk)
				if from >= n {
					return
				}
				msgs := make([]*equeue.Message, min(int(chunk), n-from))
				for i := range msgs {
					at := r.IntN(len(buf) - size)
					msgs[i] = &equeue.Message{Topic: benchTopicName, Body: buf[at : at+size]}
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

// benchDiskReclaimed opens the Badger store in dir, reclaims, and returns
// its size.
func benchDiskReclaimed(b *testing.B, dir string, c store.Compression) int64 {
	b.Helper()
	st, err := store.OpenBadger(dir, benchDiskBadgerOptions(c))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	if err := st.Reclaim(); err != nil {
		b.Fatal(err)
	}
	size, err := st.Size()
	if err != nil {
		b.Fatal(err)
	}
	return size
}

// benchDiskRaw writes n random bodies of size bytes to raw Badger, one key
// per body, and returns the directory's size after the same Reclaim.
func benchDiskRaw(b *testing.B, n, size int) int64 {
	b.Helper()
	dir := b.TempDir()
	db := benchOpenRawBadger(b, dir)
	buf := benchDiskBodies(size)
	r := rand.New(rand.NewPCG(3, 3))
	var key []byte
	for done := 0; done < n; {
		txn := db.NewTransaction(true)
		for i := 0; i < 1024 && done < n; i, done = i+1, done+1 {
			at := r.IntN(len(buf) - size)
			key = benchRecordKey(key[:0], 1, uint32(done%benchQueues), uint64(done/benchQueues))
			if err := txn.Set(append([]byte(nil), key...), buf[at:at+size]); err != nil {
				b.Fatal(err)
			}
		}
		if err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	return benchDiskReclaimed(b, dir, store.CompressionNone)
}

package equeue_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// BenchmarkBacklogRSS measures the resident memory a backlog costs a program
// that embeds the engine and does nothing else (internal/rssprobe, built
// with go build and run once per sub-benchmark, in its own process so that
// the test binary's weight and the other benchmarks' garbage do not count):
// it writes messages of 100 bytes at full speed (4 goroutines calling
// SendBatch with 1,024 messages, SyncAlways) into one 4-queue topic on a
// Badger directory, sits idle 25 s (Badger frees its pooled table-builder
// buffers one per 2 s), then closes and reopens the engine. It runs with the
// default options (budget=default), with Options.MemoryBudget of 48 MiB
// (budget=48MiB: among others it sets a soft Go memory limit while open
// and returns the Go heap 20 s after the last write), with the budget and
// the store's GoMemoryLimit -1, which opts out of the limit
// (budget=48MiB+nogolimit), with the budget and the store's
// KeepOSMemoryWhenIdle, which opts out of returning the heap
// (budget=48MiB+keepidle), and with the budget in a process whose host set
// GOMEMLIMIT=64MiB (budget=48MiB+gomemlimit=64MiB), which the store leaves
// alone.
//
// 200,000 messages by default; EQUEUE_BENCH_1M=1 writes 1,000,000 (the
// figure the README reports). Run it with -benchtime 1x: every iteration
// runs the whole program again. Metrics (Linux only, /proc/self/status):
//
//   - write-peak-MiB: VmHWM at the end of the write, the peak resident set;
//     write-anon-MiB and write-file-MiB: the largest RssAnon (Go heap,
//     stacks) and RssFile (memory-mapped tables and logs) sampled every
//     10 ms during the write.
//   - idle-MiB: VmRSS after the idle period, as the program would see it;
//     idle-settled-MiB: after runtime.GC and debug.FreeOSMemory (what the
//     Go runtime's background scavenger returns in a few minutes on its
//     own); idle-file-MiB: its memory-mapped file pages.
//   - reopen-MiB: settled, with the engine closed and opened again.
//   - msgs/s: the write's throughput; cpu-µs/msg: the process's CPU time
//     (user and system) up to the end of the write, per message.
func BenchmarkBacklogRSS(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/self/status, which only Linux has")
	}
	n := 200_000
	if os.Getenv("EQUEUE_BENCH_1M") == "1" {
		n = 1_000_000
	}
	exe := filepath.Join(b.TempDir(), "rssprobe")
	if out, err := exec.Command("go", "build", "-o", exe, "./internal/rssprobe").CombinedOutput(); err != nil {
		b.Fatalf("build internal/rssprobe: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name     string
		budget   int64
		keepIdle bool
		goLimit  int64
		memLimit string
	}{
		{"budget=default", 0, false, 0, ""},
		{"budget=48MiB", 48 << 20, false, 0, ""},
		{"budget=48MiB+nogolimit", 48 << 20, false, -1, ""},
		{"budget=48MiB+keepidle", 48 << 20, true, 0, ""},
		{"budget=48MiB+gomemlimit=64MiB", 48 << 20, false, 0, "64MiB"},
	} {
		b.Run(c.name+"/msgs="+strconv.Itoa(n), func(b *testing.B) {
			var r struct {
				WritePeakKiB, WriteAnonKiB, WriteFileKiB int64
				IdleKiB, IdleSettledKiB, IdleFileKiB     int64
				ReopenKiB                                int64
				WriteSeconds, CPUMicrosPerMsg            float64
			}
			for b.Loop() {
				cmd := exec.Command(exe, "-n", strconv.Itoa(n), "-budget", strconv.FormatInt(c.budget, 10),
					"-idle", "25s", "-keepidle="+strconv.FormatBool(c.keepIdle),
					"-golimit", strconv.FormatInt(c.goLimit, 10))
				cmd.Dir = b.TempDir()
				cmd.Env = append(os.Environ(), "TMPDIR="+cmd.Dir)
				if c.memLimit != "" {
					cmd.Env = append(cmd.Env, "GOMEMLIMIT="+c.memLimit)
				}
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("run rssprobe: %v", err)
				}
				if err := json.Unmarshal(out, &r); err != nil {
					b.Fatalf("rssprobe printed %q: %v", out, err)
				}
			}
			const kib = 1024.0
			b.ReportMetric(float64(r.WritePeakKiB)/kib, "write-peak-MiB")
			b.ReportMetric(float64(r.WriteAnonKiB)/kib, "write-anon-MiB")
			b.ReportMetric(float64(r.WriteFileKiB)/kib, "write-file-MiB")
			b.ReportMetric(float64(r.IdleKiB)/kib, "idle-MiB")
			b.ReportMetric(float64(r.IdleSettledKiB)/kib, "idle-settled-MiB")
			b.ReportMetric(float64(r.IdleFileKiB)/kib, "idle-file-MiB")
			b.ReportMetric(float64(r.ReopenKiB)/kib, "reopen-MiB")
			b.ReportMetric(float64(n)/r.WriteSeconds, "msgs/s")
			b.ReportMetric(r.CPUMicrosPerMsg, "cpu-µs/msg")
		})
	}
}

// BenchmarkSendBudget compares sending with the default options and with a
// 48 MiB MemoryBudget in the same run, 100-byte bodies: 64 goroutines
// calling Send under SyncAlways and SyncNever, and 4 calling SendBatch with
// 1,024 messages under SyncAlways. A budget shrinks the memtables (3 MiB
// instead of 8) and the tables, which costs Badger more flushes and
// compactions per message, and sets a soft Go memory limit (what the test
// binary uses at Open plus 60 MiB), which costs collections; the third
// variant (budget=48MiB+nogolimit) opts out of the limit. cpu-ns/msg is
// the process's CPU time per message, Badger's background work included.
func BenchmarkSendBudget(b *testing.B) {
	for _, c := range []struct {
		name           string
		policy         equeue.SyncPolicy
		senders, batch int
	}{
		{"SyncAlways/senders=64", equeue.SyncAlways, 64, 1},
		{"SyncNever/senders=64", equeue.SyncNever, 64, 1},
		{"SyncAlways/batch=1024x4", equeue.SyncAlways, 4, 1024},
	} {
		for _, v := range []struct {
			name    string
			budget  int64
			goLimit int64
		}{
			{"budget=default", 0, 0},
			{"budget=48MiB", 48 << 20, 0},
			{"budget=48MiB+nogolimit", 48 << 20, -1},
		} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				opts := &equeue.Options{Sync: c.policy, MemoryBudget: v.budget}
				if v.goLimit != 0 {
					opts.Badger = &store.BadgerOptions{GoMemoryLimit: v.goLimit}
				}
				benchSendBudget(b, opts, c.senders, c.batch)
			})
		}
	}
}

func benchSendBudget(b *testing.B, opts *equeue.Options, senders, batch int) {
	ctx := benchCtx(b)
	e := benchNewEngine(b, opts)
	p := benchProducer(b, e)
	body := benchBody(100)
	keys := benchQueueKeys()
	var (
		next atomic.Int64
		errs benchFirstErr
		wg   sync.WaitGroup
	)
	n := int64(b.N)
	b.SetBytes(100)
	b.ResetTimer()
	cpu := benchStartCPU()
	start := time.Now()
	for g := range senders {
		k := keys[g%len(keys)]
		wg.Go(func() {
			msgs := make([]*equeue.Message, 0, batch)
			for !errs.failed.Load() {
				from := next.Add(int64(batch)) - int64(batch)
				if from >= n {
					return
				}
				msgs = msgs[:0]
				for range min(int64(batch), n-from) {
					msgs = append(msgs, &equeue.Message{Topic: benchTopicName, Keys: k, Body: body})
				}
				var err error
				if batch == 1 {
					_, err = p.Send(ctx, msgs[0])
				} else {
					_, err = p.SendBatch(ctx, msgs)
				}
				if err != nil {
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
	benchClose(b, p, e)
}

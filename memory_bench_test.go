package equeue_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// BenchmarkBacklogRSS measures the resident memory a backlog costs a program
// that embeds the engine and does nothing else (internal/rssprobe, built
// with go build and run once per sub-benchmark, in its own process so that
// the test binary's weight and the other benchmarks' garbage do not count):
// it writes messages of 100 bytes at full speed (4 goroutines calling
// SendBatch with 1,024 messages, SyncAlways) into one 4-queue topic on a
// Badger directory, sits idle 20 s (Badger frees its pooled table-builder
// buffers one per 2 s), then closes and reopens the engine. It runs with the
// default options (budget=default) and with Options.MemoryBudget of 48 MiB
// (budget=48MiB).
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
//   - msgs/s: the write's throughput.
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
		name   string
		budget int64
	}{{"budget=default", 0}, {"budget=48MiB", 48 << 20}} {
		b.Run(c.name+"/msgs="+strconv.Itoa(n), func(b *testing.B) {
			var r struct {
				WritePeakKiB, WriteAnonKiB, WriteFileKiB int64
				IdleKiB, IdleSettledKiB, IdleFileKiB     int64
				ReopenKiB                                int64
				WriteSeconds                             float64
			}
			for b.Loop() {
				cmd := exec.Command(exe, "-n", strconv.Itoa(n), "-budget", strconv.FormatInt(c.budget, 10), "-idle", "20s")
				cmd.Dir = b.TempDir()
				cmd.Env = append(os.Environ(), "TMPDIR="+cmd.Dir)
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
		})
	}
}

package equeue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/equeue-go/equeue"
)

// BenchmarkIdleConsumers reports what idle in-process consumers cost: an
// engine with default options (Badger on a temp dir) and 1,000 consumer
// groups of one member each, all subscribed to one 4-queue topic (so each
// member runs 5 queues with its group's retry topic), that received one
// message each and then sat idle for the bench time (at least 3 s, longer
// than a handler worker's idle exit). It runs once (b.Loop); ns/op means
// nothing here.
//
// Metrics (VmRSS from /proc/self/status, so Linux only):
//
//   - base-rss-MiB: before the engine is opened (the test binary itself).
//
//   - rss-MiB: with the consumers idle, after a runtime.GC().
//
//   - consumers-rss-MiB: rss-MiB minus the same figure measured with the
//     engine open but no consumers: what the consumers add.
//
//   - go-heap-inuse-MiB, stack-inuse-MiB: the Go heap and goroutine stacks in use.
//
//   - goroutines/consumer: goroutines added per idle consumer.
//
//   - program-rss-MiB, program-consumers-rss-MiB: the whole process, and
//     what the consumers add, when the same scenario runs in a program that
//     contains nothing else (internal/idleconsumers, built with go build).
//
// With EQUEUE_BENCH_HEAPPROFILE=FILE it also writes the live heap while the
// consumers are idle.
func BenchmarkIdleConsumers(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads VmRSS from /proc/self/status, which only Linux has")
	}
	const groups = 1000
	ctx := benchCtx(b)
	if os.Getenv("EQUEUE_BENCH_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	runtime.GC()
	base := benchRSS(b)
	e := benchNewEngine(b, nil)
	runtime.GC()
	debug.FreeOSMemory()
	engineRSS := benchRSS(b)
	goroutinesBefore := runtime.NumGoroutine()

	handled := make(chan struct{}, groups)
	cs := make([]*equeue.Consumer, 0, groups)
	for i := range groups {
		c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
			Group: fmt.Sprintf("g%04d", i), ID: "m", Subscriptions: []equeue.Subscription{{Topic: benchTopicName}},
			Handler: func(context.Context, *equeue.Message) error { handled <- struct{}{}; return nil },
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		cs = append(cs, c)
	}
	p := benchProducer(b, e)
	if _, err := p.Send(ctx, &equeue.Message{Topic: benchTopicName, Body: benchBody(100)}); err != nil {
		b.Fatal(err)
	}
	for range groups {
		select {
		case <-handled:
		case <-ctx.Done():
			b.Fatal("not every group got the message")
		}
	}

	idleFrom := time.Now()
	for b.Loop() {
		time.Sleep(100 * time.Millisecond)
	}
	if rest := 3*time.Second - time.Since(idleFrom); rest > 0 {
		time.Sleep(rest)
	}
	goroutines := runtime.NumGoroutine() - goroutinesBefore
	runtime.GC()
	debug.FreeOSMemory()
	rss := benchRSS(b)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)

	if path := os.Getenv("EQUEUE_BENCH_HEAPPROFILE"); path != "" {
		writeHeapProfile(b, path)
	}
	b.ReportMetric(float64(base)/benchMiB, "base-rss-MiB")
	b.ReportMetric(float64(rss)/benchMiB, "rss-MiB")
	b.ReportMetric(float64(rss-engineRSS)/benchMiB, "consumers-rss-MiB")
	b.ReportMetric(float64(ms.HeapInuse)/benchMiB, "go-heap-inuse-MiB")
	b.ReportMetric(float64(ms.StackInuse)/benchMiB, "stack-inuse-MiB")
	b.ReportMetric(float64(goroutines)/groups, "goroutines/consumer")
	for _, c := range cs {
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
	benchClose(b, p, e)

	// The same scenario in a program that contains nothing else: what a
	// service embedding the engine pays, without the test binary's weight.
	exe := filepath.Join(b.TempDir(), "idleconsumers")
	if out, err := exec.Command("go", "build", "-o", exe, "./internal/idleconsumers").CombinedOutput(); err != nil {
		b.Fatalf("build internal/idleconsumers: %v\n%s", err, out)
	}
	out, err := exec.Command(exe, "-groups", strconv.Itoa(groups)).Output()
	if err != nil {
		b.Fatalf("run idleconsumers: %v", err)
	}
	var rep struct{ BaseKiB, EngineKiB, IdleKiB int64 }
	if err := json.Unmarshal(out, &rep); err != nil {
		b.Fatalf("idleconsumers printed %q: %v", out, err)
	}
	b.ReportMetric(float64(rep.IdleKiB)/1024, "program-rss-MiB")
	b.ReportMetric(float64(rep.IdleKiB-rep.EngineKiB)/1024, "program-consumers-rss-MiB")
}

// BenchmarkGroupJoin measures joining a new one-member group (which creates
// its retry topic) when 0 or 2,000 groups with live members exist already.
// A topic creation used to visit every group, so the cost per join grew
// with the number of groups; it should not. One op is one new group.
func BenchmarkGroupJoin(b *testing.B) {
	for _, existing := range []int{0, 2000} {
		b.Run(fmt.Sprintf("existing=%d", existing), func(b *testing.B) {
			ctx := benchCtx(b)
			e := benchOpenEngine(b, "", &equeue.Options{InMemory: true})
			if err := e.CreateTopic(ctx, benchTopicName, benchQueues); err != nil {
				b.Fatal(err)
			}
			join := func(i int) {
				g := fmt.Sprintf("g%06d", i)
				_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: g, Member: "m", Subscriptions: []equeue.Subscription{
					{Topic: benchTopicName}, {Topic: equeue.RetryTopic(g)}}})
				if err != nil {
					b.Fatal(err)
				}
			}
			for i := range existing {
				join(i)
			}
			i := existing
			for b.Loop() {
				join(i)
				i++
			}
			benchClose(b, e)
		})
	}
}

// writeHeapProfile writes the live heap to path, for looking at what idle
// consumers hold (go tool pprof -sample_index=inuse_space).
func writeHeapProfile(b *testing.B, path string) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

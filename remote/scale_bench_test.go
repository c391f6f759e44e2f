package remote_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// EQUEUE_BENCH_STORE=memory runs the broker on the in-memory store.

// benchConsumers is how many remote consumers BenchmarkThousandConsumers
// starts: EQUEUE_BENCH_CONSUMERS, default 1,000.
func benchConsumers(b *testing.B) int {
	n := 1000
	if v := os.Getenv("EQUEUE_BENCH_CONSUMERS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	return n
}

// procStat reads a process's CPU time (user+system) and resident memory.
func procStat(b *testing.B, pid int) (cpu time.Duration, rssKiB int64) {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(b, err)
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	cpu = time.Duration(ut+st) * (time.Second / 100) // USER_HZ is 100 on Linux
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(b, err)
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			rssKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return cpu, rssKiB
}

// brokerGoroutines asks the broker child for its goroutine count.
func brokerGoroutines(b *testing.B, br *mpChild) int {
	b.Helper()
	before := len(br.ids("GOROUTINES"))
	require.NoError(b, br.cmd.Process.Signal(syscall.SIGUSR1))
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ids := br.ids("GOROUTINES"); len(ids) > before {
			n, err := strconv.Atoi(ids[len(ids)-1])
			require.NoError(b, err)
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatal("the broker did not report its goroutines")
	return 0
}

// producePhase is how long a throughput measurement sends: longer than the
// broker's longest pull wait (15 s), so it covers a whole cycle of the
// consumers' long-polls ending and coming back.
const producePhase = 16 * time.Second

// produceRate sends for producePhase with 8 concurrent producers and
// returns the rate.
func produceRate(b *testing.B, c *remote.Client) float64 {
	b.Helper()
	p, err := equeue.NewProducer(c, nil)
	require.NoError(b, err)
	defer p.Close()
	var sent atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(producePhase)
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(end) {
				sent.Add(1)
				_, err := p.Send(context.Background(), &equeue.Message{Topic: "work", Body: make([]byte, benchBody)})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(sent.Load()) / time.Since(start).Seconds()
}

// BenchmarkThousandConsumers: a broker process with default server options,
// and 1,000 remote consumers (each its own group and connection) of a
// 4-queue topic in this process. Each iteration sends one message, which
// every consumer receives. Reported: the fan-out time, the broker's idle
// CPU, RSS and goroutines with every consumer long-polling, and producer
// throughput with the consumers idle relative to none (same run). The
// setup is heavy: run it once, with -benchtime=1x:
//
//	go test -run '^$' -bench ThousandConsumers -benchtime=1x ./remote
func BenchmarkThousandConsumers(b *testing.B) {
	n := benchConsumers(b)
	addr := freeAddr(b)
	dir := b.TempDir()
	if os.Getenv("EQUEUE_BENCH_STORE") == "memory" { // no fsync noise in the throughput ratio
		dir = ""
	}
	br := startChild(b, "bench-broker", "broker", "EQUEUE_MP_ADDR="+addr, "EQUEUE_MP_DIR="+dir)
	ctx := context.Background()
	admin := dial(b, addr, nil)
	require.NoError(b, admin.CreateTopic(ctx, "fan", 4))
	require.NoError(b, admin.CreateTopic(ctx, "work", 4))
	alone := produceRate(b, admin)
	idleGoroutines := brokerGoroutines(b, br)

	ownGoroutines := runtime.NumGoroutine()
	var got atomic.Int64
	var mu sync.Mutex
	cs := make([]*equeue.Consumer, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cl, err := remote.Dial(addr, nil)
			if err != nil {
				b.Error(err)
				return
			}
			b.Cleanup(func() { _ = cl.Close() })
			c, err := equeue.NewConsumer(cl, equeue.ConsumerOptions{Group: fmt.Sprintf("g%d", i), ID: "m",
				Subscriptions: []equeue.Subscription{{Topic: "fan"}}, From: equeue.ConsumeFromEarliest,
				Handler: func(context.Context, *equeue.Message) error { got.Add(1); return nil }})
			if err == nil {
				err = c.Start(ctx)
			}
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			cs[i] = c
			mu.Unlock()
		})
	}
	wg.Wait()
	if b.Failed() {
		for _, c := range cs {
			if c != nil {
				_ = c.Close()
			}
		}
		return
	}
	closeAll := func() {
		for _, c := range cs {
			wg.Go(func() { _ = c.Close() })
		}
		wg.Wait()
	}
	p, err := equeue.NewProducer(admin, nil)
	require.NoError(b, err)
	defer p.Close()

	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		_, err := p.Send(ctx, &equeue.Message{Topic: "fan", Body: []byte("x")})
		require.NoError(b, err)
		want := int64(n) * int64(i+1)
		for got.Load() < want {
			time.Sleep(time.Millisecond)
		}
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/fanout")
	b.StopTimer()

	// Idle: every consumer long-polls its queues and heartbeats.
	cpu0, _ := procStat(b, br.cmd.Process.Pid)
	own0, _ := procStat(b, os.Getpid())
	const idle = 10 * time.Second
	time.Sleep(idle)
	cpu1, rss := procStat(b, br.cmd.Process.Pid)
	own1, _ := procStat(b, os.Getpid())
	b.ReportMetric(100*(cpu1-cpu0).Seconds()/idle.Seconds(), "broker-idle-cpu-%")
	// The consumers run in this process, beside the producers measured below.
	b.ReportMetric(100*(own1-own0).Seconds()/idle.Seconds(), "consumers-idle-cpu-%")
	b.ReportMetric(float64(rss)/1024, "broker-rss-MiB")
	g := brokerGoroutines(b, br)
	b.ReportMetric(float64(g), "broker-goroutines")
	b.ReportMetric(float64(g-idleGoroutines)/float64(n), "broker-goroutines/consumer")
	// Their own side: the consumers, their clients and connections.
	b.ReportMetric(float64(runtime.NumGoroutine()-ownGoroutines)/float64(n), "consumer-goroutines/consumer")

	brokerProfile(b, br)
	busy := produceRate(b, admin)
	brokerProfile(b, br)
	// Shared disks make fsync-bound rates noisy: compare with the mean of
	// a run before the consumers started and one after they left.
	closeAll()
	after := produceRate(b, admin)
	b.ReportMetric(alone, "produce-alone-before-msgs/s")
	b.ReportMetric(after, "produce-alone-after-msgs/s")
	alone = (alone + after) / 2
	b.ReportMetric(alone, "produce-alone-msgs/s")
	b.ReportMetric(busy, "produce-with-consumers-msgs/s")
	b.ReportMetric(busy/alone, "produce-ratio")
}

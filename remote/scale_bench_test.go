package remote_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
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
	require.NoError(b, br.cmd.Process.Signal(sigGoroutines))
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

// runBenchConsumers is the consumers child of BenchmarkThousandConsumers:
// EQUEUE_BENCH_CONSUMERS remote consumers, each with its own client
// (connection) and group, subscribed to "fan" from the earliest offset. It
// prints READY once all have started, "ALL k" each time every consumer has
// handled k messages, "GOROUTINES n" (per consumer, times 1000) on SIGUSR1,
// and closes them all on SIGTERM.
func runBenchConsumers(addr string, say func(string, ...any), term <-chan os.Signal) {
	n := 1000
	if v := os.Getenv("EQUEUE_BENCH_CONSUMERS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	ctx := context.Background()
	before := runtime.NumGoroutine()
	var (
		mu      sync.Mutex
		perCons = make([]int, n)
		atLeast = map[int]int{} // k: consumers that handled k or more
	)
	handled := func(i int) {
		mu.Lock()
		defer mu.Unlock()
		perCons[i]++
		k := perCons[i]
		atLeast[k]++
		if atLeast[k] == n {
			say("ALL %d", k)
		}
	}
	cs := make([]*equeue.Consumer, n)
	cls := make([]*remote.Client, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var failed atomic.Bool
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cl, err := remote.Dial(addr, nil)
			if err != nil {
				say("ERROR dial: %v", err)
				failed.Store(true)
				return
			}
			cls[i] = cl
			c, err := equeue.NewConsumer(cl, equeue.ConsumerOptions{Group: fmt.Sprintf("g%d", i), ID: "m",
				Subscriptions: []equeue.Subscription{{Topic: "fan"}}, From: equeue.ConsumeFromEarliest,
				Handler: func(context.Context, *equeue.Message) error { handled(i); return nil }})
			if err == nil {
				err = c.Start(ctx)
			}
			if err != nil {
				say("ERROR start: %v", err)
				failed.Store(true)
				return
			}
			cs[i] = c
		})
	}
	wg.Wait()
	if failed.Load() {
		os.Exit(3)
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, sigGoroutines)
	go func() {
		for range usr1 {
			say("GOROUTINES %d", (runtime.NumGoroutine()-before)*1000/n)
		}
	}()
	say("READY")
	<-term
	for i := range n {
		wg.Go(func() {
			_ = cs[i].Close()
			_ = cls[i].Close()
		})
	}
	wg.Wait()
	say("CLOSED all")
}

// waitLine waits until ch printed a line "prefix rest" with rest as given.
func waitLine(b *testing.B, ch *mpChild, prefix, rest string, within time.Duration) {
	b.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if slices.Contains(ch.ids(prefix), rest) {
			return
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatalf("%s did not print %q %q within %v; its errors: %v", ch.name, prefix, rest, within, ch.ids("ERROR"))
}

// BenchmarkThousandConsumers: a broker process with default server options,
// and 1,000 remote consumers (each its own group and connection) of a
// 4-queue topic in a second process, as a fleet of workers on other
// machines would be. Each iteration sends one message, which every
// consumer receives. Reported: the fan-out time, the broker's idle CPU, RSS
// and goroutines with every consumer long-polling, the consumers' own idle
// CPU, and producer throughput (8 producers in this process) with the
// consumers idle relative to none (before they start and after they left,
// same run). The setup is heavy: run it once, with -benchtime=1x:
//
//	go test -run '^$' -bench ThousandConsumers -benchtime=1x ./remote
func BenchmarkThousandConsumers(b *testing.B) {
	needChildSignals(b)
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

	cons := startChild(b, "bench-consumers", "consumers", "EQUEUE_MP_ADDR="+addr, fmt.Sprintf("EQUEUE_BENCH_CONSUMERS=%d", n))
	p, err := equeue.NewProducer(admin, nil)
	require.NoError(b, err)
	defer p.Close()

	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		_, err := p.Send(ctx, &equeue.Message{Topic: "fan", Body: []byte("x")})
		require.NoError(b, err)
		waitLine(b, cons, "ALL", strconv.Itoa(i+1), time.Minute)
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/fanout")
	b.StopTimer()

	// Idle: every consumer long-polls its queues and heartbeats.
	cpu0, _ := procStat(b, br.cmd.Process.Pid)
	own0, _ := procStat(b, cons.cmd.Process.Pid)
	const idle = 10 * time.Second
	time.Sleep(idle)
	cpu1, rss := procStat(b, br.cmd.Process.Pid)
	own1, consRSS := procStat(b, cons.cmd.Process.Pid)
	b.ReportMetric(100*(cpu1-cpu0).Seconds()/idle.Seconds(), "broker-idle-cpu-%")
	b.ReportMetric(100*(own1-own0).Seconds()/idle.Seconds(), "consumers-idle-cpu-%")
	b.ReportMetric(float64(rss)/1024, "broker-rss-MiB")
	b.ReportMetric(float64(consRSS)/1024, "consumers-rss-MiB")
	g := brokerGoroutines(b, br)
	b.ReportMetric(float64(g), "broker-goroutines")
	b.ReportMetric(float64(g-idleGoroutines)/float64(n), "broker-goroutines/consumer")
	// Their own side: the consumers, their clients and connections.
	before := len(cons.ids("GOROUTINES"))
	require.NoError(b, cons.cmd.Process.Signal(sigGoroutines))
	for len(cons.ids("GOROUTINES")) == before {
		time.Sleep(10 * time.Millisecond)
	}
	perK, err := strconv.Atoi(cons.ids("GOROUTINES")[before])
	require.NoError(b, err)
	b.ReportMetric(float64(perK)/1000, "consumer-goroutines/consumer")

	brokerProfile(b, br)
	busy := produceRate(b, admin)
	brokerProfile(b, br)
	require.NoError(b, cons.cmd.Process.Signal(syscall.SIGTERM))
	waitLine(b, cons, "CLOSED", "all", 2*time.Minute)
	_ = cons.cmd.Wait()
	after := produceRate(b, admin)
	b.ReportMetric(alone, "produce-alone-before-msgs/s")
	b.ReportMetric(after, "produce-alone-after-msgs/s")
	alone = (alone + after) / 2
	b.ReportMetric(alone, "produce-alone-msgs/s")
	b.ReportMetric(busy, "produce-with-consumers-msgs/s")
	b.ReportMetric(busy/alone, "produce-ratio")
}

// Command idleconsumers measures what idle in-process consumers cost a
// program that does nothing else: it opens an engine (Badger, default
// options) on a temporary directory, starts N one-member consumer groups on
// one 4-queue topic, sends one message that every group handles, waits for
// the consumers to go idle and prints its resident set sizes as JSON.
// BenchmarkIdleConsumers builds and runs it; it is not part of the API.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/equeue-go/equeue"
)

// Report is what the program prints.
type Report struct {
	// BaseKiB, EngineKiB and IdleKiB are the resident set sizes before the engine,
	// with it open, and with the idle consumers running.
	BaseKiB, EngineKiB, IdleKiB int64
	// Goroutines counts the goroutines with the idle consumers running.
	Goroutines int
}

func main() {
	groups := flag.Int("groups", 1000, "consumer groups of one member each")
	idle := flag.Duration("idle", 3*time.Second, "how long the consumers sit idle before the measurement")
	flag.Parse()
	if err := run(*groups, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "idleconsumers:", err)
		os.Exit(1)
	}
}

func run(groups int, idle time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var r Report
	r.BaseKiB = settledRSS()
	dir, err := os.MkdirTemp("", "equeue-idle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e, err := equeue.Open(dir, nil)
	if err != nil {
		return err
	}
	defer e.Close()
	if err := e.CreateTopic(ctx, "t", 4); err != nil {
		return err
	}
	r.EngineKiB = settledRSS()
	handled := make(chan struct{}, groups)
	for i := range groups {
		c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
			Group: fmt.Sprintf("g%05d", i), ID: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}},
			Handler: func(context.Context, *equeue.Message) error { handled <- struct{}{}; return nil },
		})
		if err != nil {
			return err
		}
		if err := c.Start(ctx); err != nil {
			return err
		}
	}
	p, err := equeue.NewProducer(e, nil)
	if err != nil {
		return err
	}
	if _, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: make([]byte, 100)}); err != nil {
		return err
	}
	for range groups {
		select {
		case <-handled:
		case <-ctx.Done():
			return fmt.Errorf("not every group got the message: %w", ctx.Err())
		}
	}
	time.Sleep(idle)
	r.Goroutines = runtime.NumGoroutine()
	r.IdleKiB = settledRSS()
	return json.NewEncoder(os.Stdout).Encode(r)
}

// settledRSS collects garbage, returns freed memory to the OS and reads
// VmRSS from /proc/self/status (0 where there is none).
func settledRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

package remote_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Each benchmark runs the same work in-process (on the *Engine) and through
// the network adapter (a Client over loopback), on the in-memory store and
// on Badger with the default SyncAlways policy, so the figures of one run
// can be compared side by side.

const benchBody = 256

var benchStores = []string{"memory", "badger"}

// benchBroker opens an engine of the given store and returns it as a broker
// in-process or through a server and client, closed when b ends.
func benchBroker(b *testing.B, storeKind, transport string) (equeue.Broker, *equeue.Engine) {
	b.Helper()
	var e *equeue.Engine
	if storeKind == "memory" {
		e = openEngine(b, nil)
	} else {
		var err error
		e, err = equeue.Open(b.TempDir(), nil)
		require.NoError(b, err)
		b.Cleanup(func() { require.NoError(b, e.Close()) })
	}
	require.NoError(b, e.CreateTopic(context.Background(), "bench", 4))
	if transport == "inproc" {
		return e, e
	}
	s := startServer(b, e, "", nil)
	return dial(b, s.addr, nil), e
}

func forEachSetup(b *testing.B, run func(b *testing.B, br equeue.Broker, e *equeue.Engine)) {
	for _, st := range benchStores {
		b.Run(st, func(b *testing.B) {
			for _, tr := range []string{"inproc", "remote"} {
				b.Run(tr, func(b *testing.B) {
					br, e := benchBroker(b, st, tr)
					run(b, br, e)
				})
			}
		})
	}
}

func benchMessage() *equeue.Message {
	body := make([]byte, benchBody)
	_, _ = rand.Read(body)
	return &equeue.Message{Topic: "bench", Body: body}
}

func reportRate(b *testing.B, msgs int, d time.Duration) {
	b.ReportMetric(float64(msgs)/d.Seconds(), "msgs/s")
	b.SetBytes(benchBody)
}

// BenchmarkPublishSync: one sender, one synchronous Send at a time.
func BenchmarkPublishSync(b *testing.B) {
	forEachSetup(b, func(b *testing.B, br equeue.Broker, _ *equeue.Engine) {
		p := newProducer(b, br)
		ctx := context.Background()
		m := benchMessage()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if _, err := p.Send(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b, b.N, time.Since(start))
	})
}

// BenchmarkPublishBatch: 4 senders, each sending batches of 100 with SendBatch.
// One op is one message.
func BenchmarkPublishBatch(b *testing.B) {
	const senders, batch = 4, 100
	forEachSetup(b, func(b *testing.B, br equeue.Broker, _ *equeue.Engine) {
		p := newProducer(b, br)
		ctx := context.Background()
		msgs := make([]*equeue.Message, batch)
		for i := range msgs {
			msgs[i] = benchMessage()
		}
		batches := int64((b.N + batch - 1) / batch)
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, senders)
		b.ResetTimer()
		start := time.Now()
		for s := 0; s < senders; s++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= batches {
					if _, err := p.SendBatch(ctx, msgs); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		reportRate(b, int(batches)*batch, elapsed)
	})
}

// BenchmarkConsume: a Consumer (default options) drains b.N stored messages.
func BenchmarkConsume(b *testing.B) {
	forEachSetup(b, func(b *testing.B, br equeue.Broker, e *equeue.Engine) {
		ctx := context.Background()
		never := equeue.SyncNever
		m := benchMessage()
		for sent := 0; sent < b.N; {
			n := min(500, b.N-sent)
			msgs := make([]*equeue.Message, n)
			for i := range msgs {
				msgs[i] = m
			}
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "bench", Queue: sent / 500 % 4, Messages: msgs, Sync: &never})
			require.NoError(b, err)
			sent += n
		}
		var handled atomic.Int64
		done := make(chan struct{})
		c, err := equeue.NewConsumer(br, equeue.ConsumerOptions{Group: "bench", Subscriptions: []equeue.Subscription{{Topic: "bench"}},
			From: equeue.ConsumeFromEarliest, Handler: func(context.Context, *equeue.Message) error {
				if handled.Add(1) == int64(b.N) {
					close(done)
				}
				return nil
			}})
		require.NoError(b, err)
		b.ResetTimer()
		start := time.Now()
		require.NoError(b, c.Start(ctx))
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			b.Fatalf("consumed %d of %d", handled.Load(), b.N)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		require.NoError(b, c.Close())
		reportRate(b, b.N, elapsed)
	})
}

// BenchmarkPublishAsync: one sender keeps up to 1,024 SendAsync calls in
// flight (in-process they share the engine's writes; over remote they are
// pipelined on one stream). One op is one message.
func BenchmarkPublishAsync(b *testing.B) {
	const window = 1024
	forEachSetup(b, func(b *testing.B, br equeue.Broker, _ *equeue.Engine) {
		p := newProducer(b, br)
		ctx := context.Background()
		m := benchMessage()
		ring := make([]*equeue.SendFuture, window)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if f := ring[i%window]; f != nil {
				if _, err := f.Result(ctx); err != nil {
					b.Fatal(err)
				}
			}
			ring[i%window] = p.SendAsync(ctx, m)
		}
		for _, f := range ring {
			if f != nil {
				if _, err := f.Result(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportRate(b, b.N, time.Since(start))
	})
}

// BenchmarkPullCall measures one Pull call on a Badger engine, in-process
// and over remote, of 1 message (what a long-polling consumer woken by one
// message pulls) and of 128 (a consumer's pull size): the cost of a call
// itself. Every call reads the same messages (offset 0 of a queue of 1,024).
// Reports the CPU time per call of the whole process (client and broker).
func BenchmarkPullCall(b *testing.B) {
	for _, max := range []int{1, 128} {
		for _, tr := range []string{"inproc", "remote"} {
			b.Run(fmt.Sprintf("max=%d/%s", max, tr), func(b *testing.B) {
				br, e := benchBroker(b, "badger", tr)
				ctx := context.Background()
				msgs := make([]*equeue.Message, 1024)
				for i := range msgs {
					msgs[i] = benchMessage()
				}
				_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "bench", Queue: 0, Messages: msgs})
				require.NoError(b, err)
				req := &equeue.PullRequest{Topic: "bench", Queue: 0, Max: max}
				cpu0, _ := benchProcessCPU()
				b.ResetTimer()
				for b.Loop() {
					res, err := br.Pull(ctx, req)
					if err != nil || len(res.Messages) != max {
						b.Fatalf("pulled %d of %d: %v", len(res.Messages), max, err)
					}
				}
				b.StopTimer()
				if cpu1, ok := benchProcessCPU(); ok {
					b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
				}
			})
		}
	}
}

package kafka_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/equeue-go/equeue"
)

// The benchmarks run the same work through franz-go and the native API on
// the same kind of engine (Badger in a temporary directory, SyncAlways), so
// their msgs/s compare within one run:
//
//	go test -run '^$' -bench 'Produce|Consume' -benchtime 100000x -count 3 ./kafka

const (
	benchQueues = 4
	benchBody   = 100
	benchBatch  = 100 // native SendBatch size, and producers' batch goal
)

func benchEngine(b *testing.B) *equeue.Engine {
	b.Helper()
	e, err := equeue.Open(b.TempDir(), nil)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, e.Close()) })
	require.NoError(b, e.CreateTopic(context.Background(), "bench", benchQueues))
	return e
}

func report(b *testing.B, n int, d time.Duration) {
	b.ReportMetric(float64(n)/d.Seconds(), "msgs/s")
	b.SetBytes(benchBody)
}

// BenchmarkProduce_Kafka: franz-go, acks=all (and idempotent, its default),
// records spread over the partitions, batched by the client.
func BenchmarkProduce_Kafka(b *testing.B) {
	e := benchEngine(b)
	addr := serve(b, e, nil)
	cl := kclient(b, addr, kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.MaxBufferedRecords(64<<10))
	ctx := context.Background()
	body := make([]byte, benchBody)
	var failed atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: body}, func(_ *kgo.Record, err error) {
			if err != nil && failed.Add(1) == 1 {
				b.Log(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	report(b, b.N, time.Since(start))
	require.Zero(b, failed.Load())
}

// BenchmarkProduce_Native: Producer.SendBatch of benchBatch messages, one
// sender per queue.
func BenchmarkProduce_Native(b *testing.B) {
	e := benchEngine(b)
	p, err := equeue.NewProducer(e, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()
	body := make([]byte, benchBody)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range benchQueues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(min(int64(benchBatch), int64(b.N)-next.Add(benchBatch)+benchBatch))
				if n <= 0 {
					return
				}
				msgs := make([]*equeue.Message, n)
				for i := range msgs {
					msgs[i] = &equeue.Message{Topic: "bench", Body: body}
				}
				if _, err := p.SendBatch(ctx, msgs); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	report(b, b.N, time.Since(start))
}

// fill stores n messages spread over the queues, unmeasured.
func fill(b *testing.B, e *equeue.Engine, n int) {
	b.Helper()
	body := make([]byte, benchBody)
	for sent := 0; sent < n; {
		k := min(1000, n-sent)
		msgs := make([]*equeue.Message, k)
		for i := range msgs {
			msgs[i] = &equeue.Message{Body: body}
		}
		_, err := e.Append(context.Background(), &equeue.AppendRequest{Topic: "bench", Queue: (sent / 1000) % benchQueues, Messages: msgs})
		require.NoError(b, err)
		sent += k
	}
}

// BenchmarkConsume_Kafka: franz-go consuming every partition from the start.
func BenchmarkConsume_Kafka(b *testing.B) {
	e := benchEngine(b)
	fill(b, e, b.N)
	addr := serve(b, e, nil)
	b.ResetTimer()
	start := time.Now()
	cl := kclient(b, addr, kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := context.Background()
	got := 0
	for got < b.N {
		fs := cl.PollFetches(ctx)
		require.Empty(b, fs.Errors())
		got += fs.NumRecords()
	}
	report(b, got, time.Since(start))
}

// BenchmarkConsume_Native: a native consumer group over the same data.
func BenchmarkConsume_Native(b *testing.B) {
	e := benchEngine(b)
	fill(b, e, b.N)
	var got atomic.Int64
	done := make(chan struct{})
	b.ResetTimer()
	start := time.Now()
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "bench", Subscriptions: []equeue.Subscription{{Topic: "bench"}},
		Handler: func(context.Context, *equeue.Message) error {
			if got.Add(1) == int64(b.N) {
				close(done)
			}
			return nil
		}})
	require.NoError(b, err)
	require.NoError(b, c.Start(context.Background()))
	<-done
	report(b, b.N, time.Since(start))
	require.NoError(b, c.Close())
}

// BenchmarkConsume_KafkaGroup: franz-go as a consumer group member (join,
// sync, offset fetch and its periodic commits included), the closer match
// to the native consumer.
func BenchmarkConsume_KafkaGroup(b *testing.B) {
	e := benchEngine(b)
	fill(b, e, b.N)
	addr := serve(b, e, nil)
	b.ResetTimer()
	start := time.Now()
	cl := kclient(b, addr, kgo.ConsumerGroup("bench"), kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := context.Background()
	got := 0
	for got < b.N {
		fs := cl.PollFetches(ctx)
		require.Empty(b, fs.Errors())
		got += fs.NumRecords()
	}
	report(b, got, time.Since(start))
}

package equeue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/equeue-go/equeue"
)

// BenchmarkPriority_ConsumeCost compares consuming a backlog from a topic
// with three priority lanes against a plain topic, in the same run: each
// iteration stores a backlog of 20,000 100-byte messages in one queue of
// each topic (spread evenly over the lanes of the priority topic) on an
// in-memory engine, then times one consumer (Concurrency 4) handling all
// of it. Metrics: plain-msgs/s, priority-msgs/s and priority/plain (the
// ratio of the two rates; 1 means no cost).
func BenchmarkPriority_ConsumeCost(b *testing.B) {
	const n = 20000
	ctx := benchCtx(b)
	e := benchOpenEngine(b, "", &equeue.Options{InMemory: true})
	if err := e.CreateTopicWith(ctx, "plain", equeue.TopicOptions{Queues: 1}); err != nil {
		b.Fatal(err)
	}
	if err := e.CreateTopicWith(ctx, "prio", equeue.TopicOptions{Queues: 1, Priorities: 3}); err != nil {
		b.Fatal(err)
	}
	p := benchProducer(b, e)
	body := benchBody(100)
	load := func(topic string, lanes int) {
		for i := 0; i < n; i += 100 {
			batch := make([]*equeue.Message, 100)
			for j := range batch {
				batch[j] = &equeue.Message{Topic: topic, Body: body, Priority: (i / 100) % lanes}
			}
			if _, err := p.SendBatch(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	round := 0
	consume := func(topic string) time.Duration {
		var handled atomic.Int64
		done := make(chan struct{})
		c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: topic, // resumes after the previous round
			Subscriptions: []equeue.Subscription{{Topic: topic}}, Concurrency: 4,
			Handler: func(context.Context, *equeue.Message) error {
				if handled.Add(1) == n {
					close(done)
				}
				return nil
			}})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		<-done
		took := time.Since(start)
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		return took
	}
	var plain, prio time.Duration
	for b.Loop() {
		round++
		load("plain", 1)
		load("prio", 3)
		// Alternate which goes first, so neither always runs on a warmer engine.
		if round%2 == 0 {
			plain += consume("plain")
			prio += consume("prio")
		} else {
			prio += consume("prio")
			plain += consume("plain")
		}
	}
	total := float64(n * round)
	b.ReportMetric(total/plain.Seconds(), "plain-msgs/s")
	b.ReportMetric(total/prio.Seconds(), "priority-msgs/s")
	b.ReportMetric(plain.Seconds()/prio.Seconds(), "priority/plain")
}

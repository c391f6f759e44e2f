package equeue_test

import (
	"testing"
	"time"

	"github.com/equeue-go/equeue"
)

// BenchmarkPriority_PullConsumerCost compares a PullConsumer draining a
// backlog of a topic with three priority lanes against a plain topic, in
// the same run: each iteration stores 20,000 100-byte messages in one
// queue of each topic (spread evenly over the lanes) on an in-memory
// engine, then times a loop that fetches every assigned queue ID, lowest
// lane first, 32 at a time, until all are fetched. A gated lane's Fetch
// reads the higher lanes; what it reads is handed out by their next Fetch.
// Metrics: plain-msgs/s, priority-msgs/s and priority/plain (1: no cost).
func BenchmarkPriority_PullConsumerCost(b *testing.B) {
	const n = 20000
	ctx := benchCtx(b)
	e := benchOpenEngine(b, "", &equeue.Options{InMemory: true})
	for _, t := range []struct {
		name  string
		lanes int
	}{{"plain", 0}, {"prio", 3}} {
		if err := e.CreateTopicWith(ctx, t.name, equeue.TopicOptions{Queues: 1, Priorities: t.lanes}); err != nil {
			b.Fatal(err)
		}
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
	consumers := map[string]*equeue.PullConsumer{}
	for _, topic := range []string{"plain", "prio"} {
		pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: topic, Subscriptions: []equeue.Subscription{{Topic: topic}}})
		if err != nil {
			b.Fatal(err)
		}
		if err := pc.Start(ctx); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = pc.Close() })
		consumers[topic] = pc
	}
	drain := func(topic string) time.Duration {
		pc := consumers[topic]
		refs := pc.Assigned()
		start := time.Now()
		for got := 0; got < n; {
			for _, ref := range refs {
				msgs, err := pc.Fetch(ctx, ref, 32, 0)
				if err != nil {
					b.Fatal(err)
				}
				got += len(msgs)
			}
		}
		return time.Since(start)
	}
	var plain, prio time.Duration
	round := 0
	for b.Loop() {
		round++
		load("plain", 1)
		load("prio", 3)
		if round%2 == 0 {
			plain += drain("plain")
			prio += drain("prio")
		} else {
			prio += drain("prio")
			plain += drain("plain")
		}
	}
	total := float64(n * round)
	b.ReportMetric(total/plain.Seconds(), "plain-msgs/s")
	b.ReportMetric(total/prio.Seconds(), "priority-msgs/s")
	b.ReportMetric(plain.Seconds()/prio.Seconds(), "priority/plain")
}

package metrics_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
)

// Create the collector first, open the engine with it as its Observer (so
// pulls are timed), attach the engine, and register the collector. A
// program serves the registry with promhttp.HandlerFor on /metrics; here
// one scrape is printed instead.
func ExampleNew() {
	ctx := context.Background()
	m := metrics.New()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true, Observer: m})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	m.Attach(eng)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)

	_ = eng.CreateTopic(ctx, "orders", 1)
	p, _ := equeue.NewProducer(eng, nil)
	for range 3 {
		_, _ = p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte("x")})
	}
	_, _ = eng.Pull(ctx, &equeue.PullRequest{Topic: "orders", Max: 2})

	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		switch f.GetName() {
		case "equeue_appended_messages_total", "equeue_pulled_messages_total", "equeue_queue_max_offset":
			for _, s := range f.GetMetric() {
				var labels []string
				for _, l := range s.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				value := s.GetCounter().GetValue() + s.GetGauge().GetValue()
				fmt.Printf("%s{%s} %v\n", f.GetName(), strings.Join(labels, ","), value)
			}
		}
	}
	// Output:
	// equeue_appended_messages_total{queue=0,topic=orders} 3
	// equeue_pulled_messages_total{topic=orders} 2
	// equeue_queue_max_offset{queue=0,topic=orders} 3
}

// Handler time and errors are recorded by the collector's Hooks, given to
// each Consumer.
func ExampleCollector_Hooks() {
	ctx := context.Background()
	m := metrics.New()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true, Observer: m})
	defer eng.Close()
	m.Attach(eng)
	_ = eng.CreateTopic(ctx, "jobs", 1)

	done := make(chan struct{})
	c, _ := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:         "workers",
		Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
		Hooks:         []equeue.Hooks{m.Hooks()},
		Handler: func(context.Context, *equeue.Message) error {
			close(done)
			return nil
		},
	})
	_ = c.Start(ctx)
	p, _ := equeue.NewProducer(eng, nil)
	_, _ = p.Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte("resize")})
	<-done
	_ = c.Close() // the handler's hooks have run once Close returns

	n := testutil.CollectAndCount(m, "equeue_handler_duration_seconds")
	fmt.Println("handler duration series:", n)
	// Output: handler duration series: 1
}

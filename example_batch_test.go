package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/equeue-go/equeue"
)

// A batch handler gets up to BatchSize messages of one queue per call. A
// BatchError fails only the messages it names: here the invalid row goes
// to the retry topic and is handled again on its own, the others are done.
func ExampleBatchHandler() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	_ = eng.CreateTopic(ctx, "rows", 1)
	p, _ := equeue.NewProducer(eng, nil)
	defer p.Close()
	for _, row := range []string{"a", "b", "bad", "c"} {
		_, _ = p.Send(ctx, &equeue.Message{Topic: "rows", Body: []byte(row)})
	}
	calls := make(chan string, 10)
	c, _ := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:            "loader",
		Subscriptions:    []equeue.Subscription{{Topic: "rows"}},
		BatchSize:        10,
		RetryTopicDelays: []time.Duration{10 * time.Millisecond},
		BatchHandler: func(_ context.Context, msgs []*equeue.Message) error {
			var rows []string
			failed := map[int]error{}
			for i, m := range msgs {
				rows = append(rows, fmt.Sprintf("%s#%d", m.Body, m.Attempt))
				if string(m.Body) == "bad" && m.Attempt == 0 {
					failed[i] = errors.New("invalid row")
				}
			}
			calls <- strings.Join(rows, " ")
			if len(failed) > 0 {
				return &equeue.BatchError{Failed: failed}
			}
			return nil
		},
	})
	_ = c.Start(ctx)
	defer c.Close()
	fmt.Println(<-calls)
	fmt.Println(<-calls)
	// Output:
	// a#0 b#0 bad#0 c#0
	// bad#1
}

// A topic with priority lanes hands a queue's higher-priority messages to
// the handler first: here the urgent message, sent last, is handled first.
func ExampleTopicOptions_priorities() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	_ = eng.CreateTopicWith(ctx, "mail", equeue.TopicOptions{Queues: 1, Priorities: 2})
	p, _ := equeue.NewProducer(eng, nil)
	defer p.Close()
	_, _ = p.Send(ctx, &equeue.Message{Topic: "mail", Body: []byte("newsletter")})
	_, _ = p.Send(ctx, &equeue.Message{Topic: "mail", Body: []byte("digest")})
	_, _ = p.Send(ctx, &equeue.Message{Topic: "mail", Body: []byte("password reset"), Priority: 1})
	got := make(chan string, 3)
	c, _ := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:         "mailer",
		Subscriptions: []equeue.Subscription{{Topic: "mail"}},
		Concurrency:   1,
		Handler: func(_ context.Context, m *equeue.Message) error {
			got <- fmt.Sprintf("%s (priority %d)", m.Body, m.Priority)
			return nil
		},
	})
	_ = c.Start(ctx)
	defer c.Close()
	for range 3 {
		fmt.Println(<-got)
	}
	// Output:
	// password reset (priority 1)
	// newsletter (priority 0)
	// digest (priority 0)
}

package equeue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/equeue-go/equeue"
)

func ExampleEngine_Namespace() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	a, _ := eng.Namespace("tenant-a")
	b, _ := eng.Namespace("tenant-b")
	// The same name in two namespaces: two topics.
	_ = a.CreateTopic(ctx, "orders", 4)
	_ = b.CreateTopic(ctx, "orders", 2)
	p, _ := equeue.NewProducer(a, nil)
	defer p.Close()
	_, _ = p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte("a1")})

	ta, _ := a.Topic(ctx, "orders")
	tb, _ := b.Topic(ctx, "orders")
	fmt.Println(ta.Name, len(ta.Queues), ta.Messages)
	fmt.Println(tb.Name, len(tb.Queues), tb.Messages)
	all, _ := eng.Topics(ctx) // the engine sees every namespace
	for _, t := range all {
		fmt.Println(t.Name)
	}
	// Output:
	// orders 4 1
	// orders 2 0
	// tenant-a:orders
	// tenant-b:orders
}

func ExampleEngine_SetTopicLimits() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	_ = eng.CreateTopicWith(ctx, "jobs", equeue.TopicOptions{Queues: 1,
		Limits: equeue.TopicLimits{MaxMessages: 2, Overflow: equeue.OverflowReject}})
	p, _ := equeue.NewProducer(eng, nil)
	defer p.Close()
	for _, body := range []string{"1", "2", "3"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte(body)})
		fmt.Println(body, errors.Is(err, equeue.ErrTopicFull))
	}
	// Now keep the newest two instead of refusing.
	_ = eng.SetTopicLimits(ctx, "jobs", equeue.TopicLimits{MaxMessages: 2, Overflow: equeue.OverflowDropOldest})
	_, _ = p.Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte("4")})
	info, _ := eng.Topic(ctx, "jobs")
	fmt.Println(info.Limits, info.Messages, info.Queues[0].MinOffset)
	// Output:
	// 1 false
	// 2 false
	// 3 true
	// max-messages=2 overflow=drop-oldest 2 1
}

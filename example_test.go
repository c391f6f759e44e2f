package equeue_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/equeue-go/equeue"
)

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "equeue-example")
	defer os.RemoveAll(dir)
	eng, err := equeue.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if err := eng.CreateTopic(context.Background(), "orders", 4); err != nil {
		log.Fatal(err)
	}
	info, _ := eng.Topic(context.Background(), "orders")
	fmt.Println(info.Name, len(info.Queues))
	// Output: orders 4
}

func ExampleProducer_Send() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	_ = eng.CreateTopic(ctx, "orders", 4)
	p, _ := equeue.NewProducer(eng, nil)
	defer p.Close()
	a, _ := p.Send(ctx, &equeue.Message{Topic: "orders", Keys: []string{"alice"}, Body: []byte("first")})
	b, _ := p.Send(ctx, &equeue.Message{Topic: "orders", Keys: []string{"alice"}, Body: []byte("second")})
	fmt.Println(a.Queue == b.Queue, a.Offset, b.Offset)
	// Output: true 0 1
}

func ExampleConsumer() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	_ = eng.CreateTopic(ctx, "jobs", 1)
	done := make(chan string)
	c, _ := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:         "workers",
		Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			done <- string(m.Body)
			return nil
		},
	})
	_ = c.Start(ctx)
	defer c.Close()
	p, _ := equeue.NewProducer(eng, nil)
	_, _ = p.Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte("resize image 7")})
	fmt.Println(<-done)
	// Output: resize image 7
}

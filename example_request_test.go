package equeue_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/equeue-go/equeue"
)

func ExampleProducer_Request() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	_ = eng.CreateTopic(ctx, "upper", 1)

	// The service: a consumer that answers each request with Reply.
	replies, _ := equeue.NewProducer(eng, nil)
	defer replies.Close()
	svc, _ := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:         "upper-service",
		Subscriptions: []equeue.Subscription{{Topic: "upper"}},
		Handler: func(ctx context.Context, m *equeue.Message) error {
			return equeue.Reply(ctx, replies, m, []byte(strings.ToUpper(string(m.Body))), nil)
		},
	})
	_ = svc.Start(ctx)
	defer svc.Close()

	// The client: Request sends and waits for the reply.
	p, _ := equeue.NewProducer(eng, nil)
	defer p.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rep, err := p.Request(rctx, &equeue.Message{Topic: "upper", Body: []byte("hello")})
	fmt.Println(string(rep.Body), err)
	// Output: HELLO <nil>
}

func ExampleEngine_DeleteGroup() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	_ = eng.CreateTopic(ctx, "jobs", 1)
	c, _ := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:         "old-workers",
		Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
		Handler:       func(context.Context, *equeue.Message) error { return nil },
	})
	_ = c.Start(ctx)

	err := eng.DeleteGroup(ctx, "old-workers", equeue.DeleteGroupOptions{})
	fmt.Println(err != nil) // a live member: refused
	_ = c.Close()
	fmt.Println(eng.DeleteGroup(ctx, "old-workers", equeue.DeleteGroupOptions{}))
	_, err = eng.Group(ctx, "old-workers")
	fmt.Println(err != nil)
	// Output:
	// true
	// <nil>
	// true
}
